# Red team, 2026-11-30: written against the judge by someone who had not built it;
# it got AC before the fixes that followed (its docstring says how it cheated).
# expect: tolist
"""Cheat: pure Python. x.tolist()/torch.tensor(list) are not dispatched as compute ops (or are on the
allow list); the sum is Python float arithmetic. A no-op kernel is given the result."""
import torch
import triton
import triton.language as tl


@triton.jit
def touch_kernel(out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)


def add(x, y):
    vals = [a + b for a, b in zip(x.tolist(), y.tolist())]
    out = torch.tensor(vals, dtype=x.dtype, device=x.device)
    touch_kernel[(1,)](out, x.numel(), BLOCK=16)
    return out
