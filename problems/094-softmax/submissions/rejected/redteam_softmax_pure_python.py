# Red team, 2026-11-30: written against the judge by someone who had not built it;
# it got AC before the fixes that followed (its docstring says how it cheated).
# expect: tolist
"""Cheat (94): softmax in pure Python floats (math.exp) over x.tolist(); a no-op kernel is given out."""
import math

import torch
import triton
import triton.language as tl


@triton.jit
def touch_kernel(out_ptr, M, BLOCK: tl.constexpr):
    pid = tl.program_id(0)


def softmax(x):
    rows = []
    for r in x.tolist():
        m = max(r)
        e = [math.exp(v - m) for v in r]
        s = sum(e)
        rows.append([v / s for v in e])
    out = torch.tensor(rows, dtype=x.dtype, device=x.device)
    touch_kernel[(1,)](out, x.shape[0], BLOCK=16)
    return out
