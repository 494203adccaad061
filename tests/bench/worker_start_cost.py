#!/usr/bin/env python3
"""What a GPU worker's start costs, alone and with others starting beside it (issue 13).

A lone `submit` starts about a dozen processes at once (its test workers, replay workers, speed-run workers,
the judge itself), and each imports torch and Triton and makes a CUDA context. Their "imports" took 4-6 s
each on the H100 and H200 where `import torch` alone took about 3 s: this separates the steps, run in N
fresh processes started together (N = 1, then --many), each printing its own seconds per step:

    torch    import torch
    cuda     torch.cuda.init() and a context (a 1-element tensor on the device)
    triton   import triton
    key      triton.runtime.cache.triton_key() (hashes Triton's compiler and libtriton)

    python tests/bench/worker_start_cost.py [--many 8]

Prints one JSON line per N: the median and largest seconds of each step, and the wall time until the last
process was done.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

CHILD = r"""
import json, time
t = time.perf_counter(); out = {}
import torch
out["torch"] = time.perf_counter() - t; t = time.perf_counter()
if torch.cuda.is_available():
    torch.cuda.init(); torch.zeros(1, device="cuda"); torch.cuda.synchronize()
out["cuda"] = time.perf_counter() - t; t = time.perf_counter()
import triton
out["triton"] = time.perf_counter() - t; t = time.perf_counter()
from triton.runtime.cache import triton_key
triton_key()
out["key"] = time.perf_counter() - t
print(json.dumps(out))
"""


def measure(n: int) -> dict:
    t0 = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True) for _ in range(n)]
    rows = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
    wall = time.perf_counter() - t0
    steps = {
        k: {"median": round(statistics.median(r[k] for r in rows), 3), "max": round(max(r[k] for r in rows), 3)}
        for k in rows[0]
    }
    return {"processes": n, "wall_s": round(wall, 3), **steps}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--many", type=int, default=8)
    args = ap.parse_args()
    measure(1)  # the page cache warm, as for a judge on a machine in use
    for n in (1, args.many):
        print(json.dumps(measure(n)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
