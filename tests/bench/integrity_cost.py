#!/usr/bin/env python3
"""What the worker's integrity check costs (judge.untrusted.integrity): a snapshot (taken once after the import,
and at every timing request) and changed() (after every call of the submission).

Each tree given (default: this one) is timed in a process of its own, in turn, ROUNDS times: torch and Triton
imported first, as in a worker; then the medians of N snapshots and of N changed() calls.

    python tests/bench/integrity_cost.py [--trees DIR ...] [--rounds 3] [-n 40]
"""

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

ONE = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
import torch, triton
from judge.untrusted import integrity
n = int(sys.argv[2])
first = time.perf_counter(); base = integrity.snapshot(); first = time.perf_counter() - first
snaps, checks = [], []
for _ in range(n):
    t = time.perf_counter(); integrity.snapshot(); snaps.append(time.perf_counter() - t)
    t = time.perf_counter(); integrity.changed(base); checks.append(time.perf_counter() - t)
med = lambda xs: sorted(xs)[len(xs) // 2] * 1000
print(f"first snapshot {first * 1000:.1f} ms, snapshot {med(snaps):.2f} ms, changed {med(checks):.2f} ms")
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trees", nargs="*", type=Path, default=[ROOT])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("-n", type=int, default=40)
    args = ap.parse_args()
    for r in range(args.rounds):
        for tree in args.trees:
            out = subprocess.run(
                [sys.executable, "-c", ONE, str(tree.resolve()), str(args.n)], capture_output=True, text=True
            )
            print(f"round {r + 1} {tree}: {out.stdout.strip() or out.stderr.strip()[-300:]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
