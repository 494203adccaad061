#!/usr/bin/env python3
"""Does a tiny kernel's per-call time depend on the process it runs in? Stream launches against a CUDA graph.

Calibration found the reference against itself off by 4-5% at two shapes of
3-4 us (95 256^3, 96 64x1024), always in the same direction within a run,
while the profiler showed identical kernel durations in both processes: the
difference was in the GPU's gap between back-to-back kernels. This script
measures that directly. It starts P fresh processes, one after the other; each
times the reference of 93, 94, 95 and 96 at its smallest bench shape, K calls
per sample behind a spin kernel and an L2 flush, in three ways:

* ``stream``: the K calls launched on the stream (the judge's clock today);
* ``stream2``: the same after the input sets moved to new addresses (the
  spread inside one process);
* ``graph``: the K calls captured once into a CUDA graph and replayed.

Per call = (median sample - median empty sample) / K. The parent prints, per
shape and way, every process's figure and the spread max/min - 1. If
``graph`` spreads much less than ``stream`` across processes, launching from
a graph is what makes tiny shapes tie.

    python tests/bench/launch_gaps.py [--procs 6] [--samples 40] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

SHAPES = {  # problem -> (bench shape index, K): the smallest shape of each and the judge's K for it
    "93": (3, 45),
    "94": (4, 30),
    "95": (3, 25),
    "96": (3, 35),
}


def child(samples: int) -> dict:
    import torch

    from judge.problems import find_problem
    from judge.shared import bench_inputs

    sys.path.insert(0, str(ROOT / "tests" / "bench"))
    from calibrate import load_entry

    l2 = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) or 60 << 20)
    flush = torch.empty(2 * l2, dtype=torch.uint8, device="cuda")
    rate = None

    def sleep(seconds):
        nonlocal rate
        if rate is None:
            for _ in range(2):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                torch.cuda._sleep(1_000_000)
                e.record()
                e.synchronize()
                rate = 1e6 / (s.elapsed_time(e) * 1e-3)
        torch.cuda._sleep(int(seconds * rate))

    out = {}
    for pid, (index, k) in SHAPES.items():
        problem = find_problem(pid)
        params = problem.spec["bench"]["shapes"][index]
        specs = problem.golden.bench_args(dict(params))
        fn = load_entry(problem.reference_path, problem.entry_point)
        row = {"params": params, "K": k}

        def make_sets(pad_bytes):
            pad = torch.empty(pad_bytes, dtype=torch.uint8, device="cuda")
            sets = [bench_inputs.allocate(specs, "cuda") for _ in range(k)]
            return pad, sets

        def fill(sets, seed):
            for j, s in enumerate(sets):
                bench_inputs.fill(specs, s, bench_inputs.call_seed(seed, j))

        def timed(sets, launch, n):
            times, empties = [], []
            for r in range(n):
                for work in (True, False):
                    fill(sets, r)
                    torch.cuda.synchronize()
                    flush.zero_()
                    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    sleep(5e-3)
                    s.record()
                    kept = launch() if work else None
                    e.record()
                    assert not s.query(), "hold too short"
                    e.synchronize()
                    (times if work else empties).append(s.elapsed_time(e) * 1e-3)
                    del kept
            return (statistics.median(times) - statistics.median(empties)) / k

        pad, sets = make_sets(512)
        for _ in range(3):
            [fn(*a) for a in sets]
        torch.cuda.synchronize()
        row["stream"] = timed(sets, lambda: [fn(*a) for a in sets], samples)  # noqa: F821
        pad, sets = make_sets(512 * 1237)
        row["stream2"] = timed(sets, lambda: [fn(*a) for a in sets], samples)  # noqa: F821
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            [fn(*a) for a in sets]
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            outs = [fn(*a) for a in sets]
        row["graph"] = timed(sets, lambda: g.replay(), samples)  # noqa: F821
        del g, outs, sets, pad
        torch.cuda.empty_cache()
        out[pid] = row
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--procs", type=int, default=6)
    ap.add_argument("--samples", type=int, default=40)
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or "launch-gaps-out"))
    args = ap.parse_args()
    if args.child:
        print("RESULT " + json.dumps(child(args.samples)))
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    runs = []
    for p in range(args.procs):
        done = subprocess.run(
            [sys.executable, __file__, "--child", "--samples", str(args.samples)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        line = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
        if not line:
            print(f"process {p} failed:\n{done.stderr[-3000:]}", file=sys.stderr)
            continue
        runs.append(json.loads(line[0][7:]))
        print(
            f"process {p}: "
            + ", ".join(
                f"{pid} " + "/".join(f"{r[w] * 1e6:.3f}" for w in ("stream", "stream2", "graph"))
                for pid, r in runs[-1].items()
            ),
            flush=True,
        )
    (args.out / "launch_gaps.json").write_text(json.dumps(runs, indent=1))
    print("\n| problem | shape | K | way | per process (us per call) | spread max/min-1 |")
    print("|---|---|---|---|---|---|")
    for pid in SHAPES:
        for way in ("stream", "stream2", "graph"):
            xs = [r[pid][way] * 1e6 for r in runs if pid in r]
            if not xs:
                continue
            params = runs[0][pid]["params"]
            print(
                f"| {pid} | {', '.join(f'{k}={v}' for k, v in params.items())} | {runs[0][pid]['K']} | {way} | "
                f"{' '.join(f'{x:.3f}' for x in xs)} | {100 * (max(xs) / min(xs) - 1):.1f}% |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
