# Red team, 2026-11-30: written against the judge by someone who had not built it;
# it got AC before the fixes that followed (its docstring says how it cheated).
# expect: numpy
"""Cheat (94): softmax computed with numpy (in float64) into out's memory; a no-op kernel is given out."""
import torch
import triton
import triton.language as tl


@triton.jit
def touch_kernel(out_ptr, M, BLOCK: tl.constexpr):
    pid = tl.program_id(0)


def softmax(x):
    M, N = x.shape
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    a = x.numpy().astype("float64")
    a = a - a.max(axis=1, keepdims=True)
    import numpy as np
    e = np.exp(a)
    out.numpy()[...] = (e / e.sum(axis=1, keepdims=True)).astype(out.numpy().dtype)
    touch_kernel[(1,)](out, M, BLOCK=16)
    return out
