"""What each sandbox backend adds to starting a worker (not a test: no assertions).

Times, for each available backend, the start of a worker until it has
imported torch, triton and a submission and said hello, then its shutdown,
several times, and prints the median and spread of each next to the process
backend's. Run on the machine you grade on:

    python tests/bench/sandbox_startup.py [--runs 7] [--device cpu|cuda]

Figures from runs of it are in tests/bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the judge without installing it (the GPU machine)

from judge.problems import find_problem
from judge.sandbox import get_backend
from judge.sandbox.base import Job, Limits
from judge.channel import WorkerChannel

SUBMISSION = find_problem("93").directory / "submissions" / "accepted" / "masked_block.py"


def one_start(backend, device: str) -> tuple[float, float]:
    limits = Limits(case_seconds=60, run_seconds=600, memory_mb=4096, output_bytes=1 << 20, processes=256)
    with tempfile.TemporaryDirectory() as scratch:
        job = Job(submission=SUBMISSION, scratch=Path(scratch), device=device, interpret=device == "cpu",
                  limits=limits)
        t0 = time.perf_counter()
        worker = WorkerChannel(backend, job)
        worker.start(submission_entry="add", arity=2, threads=1)
        t1 = time.perf_counter()
        worker.close()
        t2 = time.perf_counter()
    return t1 - t0, t2 - t1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    print(f"host: {platform.node()} {platform.machine()}, device {args.device}, {args.runs} runs each")
    base = None
    print(f"{'backend':<8} {'start median':>12} {'min-max':>14} {'extra vs process':>17} {'close median':>12}")
    for name in ("process", "bwrap", "docker"):
        backend = get_backend(name)
        why = backend.unavailable(args.device)
        if why:
            print(f"{name:<8} unavailable: {why}")
            continue
        one_start(backend, args.device)  # warm the page cache and the image
        starts, closes = zip(*(one_start(backend, args.device) for _ in range(args.runs)))
        med = statistics.median(starts)
        base = med if name == "process" else base
        extra = f"{med - base:+.2f} s" if base is not None else "-"
        print(f"{name:<8} {med:>10.2f} s {min(starts):>6.2f}-{max(starts):<5.2f}s {extra:>17} "
              f"{statistics.median(closes):>10.2f} s")


if __name__ == "__main__":
    main()
