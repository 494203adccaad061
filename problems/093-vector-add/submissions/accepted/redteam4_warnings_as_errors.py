"""Red team 4: every warning made an exception at import (warnings.simplefilter('error'), an allowed module), so
that a warning of the judge's own code in the worker (a deprecation, a copy of a read-only buffer) would raise
there, mid-protocol. None does: an honest add, AC (a judge that warned would make an honest file RTE or IE)."""
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


import warnings

warnings.simplefilter("error")


def add(x, y):
    return _launch(x, y, torch.empty(x.numel(), dtype=x.dtype, device=x.device))
