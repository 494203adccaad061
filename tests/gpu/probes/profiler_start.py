#!/usr/bin/env python3
"""What the speed run's profiler clock pays to start and stop the profiler, the first time in a process and after.

The profiler clock (judge.timing.measure.Measure.profile) sends one profiled request per bench shape to each
worker, under the GPU lock: on the H200 it took 0.75-1.3 s of a softmax speed run's 3.7-5.5 s alone on the GPU
(9edee07:tests/gpu/RESULTS.md, 2026-12-04c call 3), 10 requests. If CUPTI's first start in a process is most of that,
one profiled request ahead of the lock (beside the tests, as the warm-up is) would take it off the lock.

Each round starts the profiler as a worker does (judge.untrusted.profiling.start), runs 3 samples of 10 small
kernels, stops it and reads its records (profiling.stop); one JSON line per round, in a fresh process each run:

    python tests/gpu/probes/profiler_start.py [--rounds 6] [--runs 2]
"""

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

ONE = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import torch
from judge.untrusted import profiling
x = torch.randn(1 << 20, device="cuda")
(x * 2).sum().item()  # the context and the first kernels, outside the rounds
for r in range(int(sys.argv[2])):
    t0 = time.perf_counter()
    prof, why = profiling.start(torch, True)
    t1 = time.perf_counter()
    for _ in range(3):
        for _ in range(10):
            y = x * 2
        torch.cuda.synchronize()
    t2 = time.perf_counter()
    recs, why_stop = profiling.stop(prof) if prof is not None else (None, why)
    t3 = time.perf_counter()
    print(json.dumps({"round": r, "start_s": round(t1 - t0, 4), "run_s": round(t2 - t1, 4),
                      "stop_s": round(t3 - t2, 4), "records": None if recs is None else len(recs),
                      "note": why or why_stop}), flush=True)
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()
    for run in range(args.runs):
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, "-c", ONE, str(ROOT), str(args.rounds)], capture_output=True, text=True)
        print(f"# run {run + 1}: exit {r.returncode}, {time.monotonic() - t0:.1f} s")
        print(r.stdout.strip())
        if r.returncode:
            print(r.stderr.strip()[-2000:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
