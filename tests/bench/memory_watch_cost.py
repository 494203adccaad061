#!/usr/bin/env python3
"""What the judge's memory watch costs its own process: K workers watched ten times a second each.

judge.channel's watch asks judge.sandbox.base.process_tree_memory for each worker's tree ten times a second
(the pool's memory op does the same). On the H200, py-spy found 55% of a softmax `submit`'s judge-process
samples in the /proc scan behind it (9edee07:tests/gpu/RESULTS.md, 2026-12-05 call 2). This starts K idle child
processes, watches each from its own thread as the channel does for SECONDS, and prints the CPU seconds the
watching process spent per wall second, and the host's process count (what each scan reads):

    python tests/bench/memory_watch_cost.py [--workers 9] [--seconds 5] [--trees A B] [--rounds 3]

--trees A B runs the same measurement with each checkout's judge package in turn (a fresh process each),
ROUNDS rounds, the order swapped every round.
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

ONE = r"""
import json, os, subprocess, sys, threading, time
sys.path.insert(0, sys.argv[1])
from judge.sandbox.base import process_tree_memory
k, seconds = int(sys.argv[2]), float(sys.argv[3])
kids = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"]) for _ in range(k)]
time.sleep(0.5)
stop = threading.Event()
calls = [0]
def watch(pid):
    while not stop.wait(0.1):
        process_tree_memory(pid, exact_above=4 << 30)
        calls[0] += 1
threads = [threading.Thread(target=watch, args=(p.pid,)) for p in kids]
c0, w0 = time.process_time(), time.monotonic()
for t in threads: t.start()
time.sleep(seconds)
stop.set()
for t in threads: t.join()
cpu, wall = time.process_time() - c0, time.monotonic() - w0
for p in kids: p.kill()
print(json.dumps({"cpu_per_wall_s": round(cpu / wall, 4), "calls": calls[0],
                  "ms_per_call": round(1000 * cpu / max(1, calls[0]), 3),
                  "host_processes": sum(1 for n in os.listdir("/proc") if n.isdigit())}))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=9)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--trees", nargs=2, type=Path, default=None)
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    trees = [t.resolve() for t in args.trees] if args.trees else [ROOT]
    for r in range(args.rounds):
        for tree in trees[:: 1 if r % 2 == 0 else -1]:
            out = subprocess.run(
                [sys.executable, "-c", ONE, str(tree), str(args.workers), str(args.seconds)],
                capture_output=True,
                text=True,
                env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
            )
            row = json.loads(out.stdout) if out.returncode == 0 else {"error": out.stderr[-500:]}
            print(json.dumps({"round": r + 1, "tree": str(tree), "workers": args.workers, **row}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
