#!/usr/bin/env python3
"""Does the length of the spin before a timed sample change the time of tiny kernels? (H200, one run.)

K queued calls of a 4096-element add (the 93 reference) behind torch.cuda._sleep holds of
several lengths, events around the K calls, per-call medians over 30 samples each.
"""

import importlib.util
import statistics
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("ref93", ROOT / "reference" / "093-vector-add.py")
ref = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ref)
K = 45
xs = [torch.randn(4096, device="cuda") for _ in range(K)]
ys = [torch.randn(4096, device="cuda") for _ in range(K)]
flush = torch.empty(120 << 20, dtype=torch.uint8, device="cuda")
ref.add(xs[0], ys[0])
torch.cuda.synchronize()
s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
s.record()
torch.cuda._sleep(1_000_000)
e.record()
e.synchronize()
rate = 1e6 / (s.elapsed_time(e) * 1e-3)
for hold_ms in (2, 5, 10, 20, 40, 80):
    per = []
    for _ in range(30):
        torch.cuda.synchronize()
        flush.zero_()
        torch.cuda._sleep(int(hold_ms * 1e-3 * rate))
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        outs = [ref.add(x, y) for x, y in zip(xs, ys)]
        e.record()
        early = s.query()
        e.synchronize()
        per.append((s.elapsed_time(e) * 1e3 / K, early))
    ok = [t for t, early in per if not early]
    med = f"{statistics.median(ok):.3f}" if ok else "-"
    print(
        f"hold {hold_ms:5.1f} ms: {med} us per call over {len(ok)} queued samples "
        f"({len(per) - len(ok)} started early: {statistics.median([t for t, _ in per]):.3f})",
        flush=True,
    )
