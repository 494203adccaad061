"""Red team 4: the call computes honestly, then closes every descriptor above 2 (os.closerange, which no rule
names): the worker's protocol pipes with them, so its replies go nowhere or to whatever reuses the numbers.
Stopped by: the worker checks its reply descriptor before each reply (RJ: the reply channel was redirected)."""
# expect: reply channel was redirected
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, sx, sy, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * sx, mask=mask) + tl.load(y_ptr + offs * sy, mask=mask), mask=mask)


def _launch(x, y, out):
    n = x.numel()
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, x.stride(0), y.stride(0), BLOCK=1024)
    return out


import os


def add(x, y):
    out = _launch(x, y, torch.empty(x.numel(), dtype=x.dtype, device=x.device))
    os.closerange(3, 64)
    return out
