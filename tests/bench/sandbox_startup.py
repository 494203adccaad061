"""What each sandbox backend adds to starting a worker (not a test: no assertions).

Times, for each available backend, the start of a worker until it has
imported torch, triton and a submission and said hello, then its shutdown,
several times, and prints the median and spread of each next to the process
backend's. Run on the machine you grade on:

    python tests/bench/sandbox_startup.py [--runs 7] [--device cpu|cuda] [--pool]

With ``--pool`` each backend is also timed with a worker pool (judge.pool): a worker spawned ahead, given
``--settle`` seconds (default: twice the median fresh start) to import torch and Triton, then taken as a job
takes it, from asking for it to its hello: the start-up a submission waits when the pool has one warm.

Figures from runs of it are on docs/measurements/ (the old notebook: 9edee07:tests/bench/RESULTS.md).
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

from judge.channel import WorkerChannel
from judge.problems import find_problem
from judge.sandbox import get_backend
from judge.sandbox.base import Job, Limits

SUBMISSION = find_problem("93").directory / "submissions" / "accepted" / "masked_block.py"


LIMITS = Limits(
    case_seconds=60, run_seconds=600, memory_mb=4096, output_bytes=1 << 20, processes=256, gpu_memory_mb=16 << 10
)


def one_start(backend, device: str, expect_pooled: bool = False) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as scratch:
        job = Job(submission=SUBMISSION, scratch=Path(scratch), device=device, interpret=device == "cpu", limits=LIMITS)
        t0 = time.perf_counter()
        worker = WorkerChannel(backend, job)
        hello = worker.start(submission_entry="add", arity=2, threads=1)
        t1 = time.perf_counter()
        if not hello.ok or worker.pooled != expect_pooled:
            raise SystemExit(
                f"{backend.name}: the worker did not start as asked (ok={hello.ok}, "
                f"pooled={worker.pooled}): {worker.output_text()[-300:]}"
            )
        worker.close()
        t2 = time.perf_counter()
    return t1 - t0, t2 - t1


def pooled_starts(backend, device: str, runs: int, settle: float) -> list[tuple[float, float]]:
    """Each run: a fresh pool warms one worker of this kind, waits ``settle`` s, and a job takes it."""
    from judge.pool import client as pool_client
    from judge.pool import server as pool_server

    out = []
    for _ in range(runs):
        server = pool_server.PoolServer(size=1)
        pool_client.use(server.path)
        try:
            with tempfile.TemporaryDirectory() as scratch:
                job = Job(
                    submission=SUBMISSION,
                    scratch=Path(scratch),
                    device=device,
                    interpret=device == "cpu",
                    limits=LIMITS,
                )
                server.warm(backend, job)
                time.sleep(settle)
                server.drain()  # no replacement: it would import torch beside the start being timed
            out.append(one_start(backend, device, expect_pooled=True))
        finally:
            pool_client.use(None)
            server.close()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--pool", action="store_true", help="also time starts from a warm worker pool")
    ap.add_argument("--settle", type=float, default=None, help="seconds a pooled worker gets to get ready")
    ap.add_argument("--backends", default="process,bwrap,docker")
    args = ap.parse_args()
    print(f"host: {platform.node()} {platform.machine()}, device {args.device}, {args.runs} runs each")
    base = None
    print(f"{'backend':<8} {'start median':>12} {'min-max':>14} {'extra vs process':>17} {'close median':>12}")
    for name in args.backends.split(","):
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
        print(
            f"{name:<8} {med:>10.2f} s {min(starts):>6.2f}-{max(starts):<5.2f}s {extra:>17} "
            f"{statistics.median(closes):>10.2f} s",
            flush=True,
        )
        if args.pool:
            settle = args.settle if args.settle is not None else 2 * med
            pstarts, pcloses = zip(*pooled_starts(backend, args.device, args.runs, settle))
            pmed = statistics.median(pstarts)
            print(
                f"{name + '+pool':<8} {pmed:>10.2f} s {min(pstarts):>6.2f}-{max(pstarts):<5.2f}s "
                f"{pmed - med:>+15.2f} s {statistics.median(pcloses):>10.2f} s   (settled {settle:.1f} s; the "
                f"extra is against {name} without the pool)",
                flush=True,
            )


if __name__ == "__main__":
    main()
