#!/usr/bin/env python3
"""Problem 98's case inputs on the GPU: make_inputs with its float64 forward on the GPU (kit.heavy, as the
judge now runs it) against the same on the CPU.

For a few cases of 98's groups, the large ones among them, prints one JSON line each: the seconds of each
(wall clock), and how many elements of o and lse differ (0 expected: the values are drawn on the CPU, and
the float64 forward rounded to the case's dtype should round the same on either device).

    python3 tests/gpu/probes/forward_inputs.py
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

CASES = [
    dict(
        b=2,
        h=8,
        n=4096,
        d=64,
        dtype="float16",
        layout="contiguous",
        causal=True,
        sm_scale="default",
        values="normal",
        seed=1,
    ),
    dict(
        b=1,
        h=4,
        n=2049,
        d=128,
        dtype="bfloat16",
        layout="bnhd",
        causal=False,
        sm_scale="default",
        values="normal",
        seed=2,
    ),
    dict(
        b=2,
        h=3,
        n=600,
        d=64,
        dtype="float16",
        layout="contiguous",
        causal=False,
        sm_scale="default",
        values="peaky",
        seed=3,
    ),
    dict(
        b=1,
        h=2,
        n=37,
        d=16,
        dtype="bfloat16",
        layout="contiguous",
        causal=True,
        sm_scale="default",
        values="negative",
        seed=4,
    ),
]


def main() -> int:
    import torch

    from judge import kit
    from judge.problems import find_problem

    p = find_problem("98")
    same = True
    for params in CASES:
        t0 = time.perf_counter()
        cpu = p.golden.make_inputs(dict(params), kit.generator(params["seed"]))
        t1 = time.perf_counter()
        with kit.computing_on("cuda:0"):
            gpu = p.golden.make_inputs(dict(params), kit.generator(params["seed"]))
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        diffs = {}
        for name, i in (("q", 0), ("o", 3), ("lse", 4), ("do", 5)):
            a, b = cpu[i].values, gpu[i].values
            diffs[name] = int((a != b).sum().item()) if a.shape == b.shape and a.device == b.device else -1
        row = {
            "case": params,
            "cpu_s": round(t1 - t0, 3),
            "gpu_s": round(t2 - t1, 3),
            "differing": diffs,
            "strides_same": all(x.strides() == y.strides() for x, y in zip(cpu, gpu) if isinstance(x, kit.TensorInput)),
        }
        same = same and row["strides_same"] and all(v == 0 for v in diffs.values())
        print(json.dumps(row), flush=True)
    print("forward inputs:", "identical" if same else "NOT identical")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
