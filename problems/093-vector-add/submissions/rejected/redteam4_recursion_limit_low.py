"""Red team 4: sys.setrecursionlimit(60) at import: the judge's own code in the worker (the launch's record, the
reply's encoding) runs under the file's limit and fails.
Stopped by: the static scan (sys.setrecursionlimit); with it off, the failure is raised inside the file's call:
RTE naming the launch line, never IE (tests/test_anticheat_runtime.py)."""
# expect: sys.setrecursionlimit
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


import sys

sys.setrecursionlimit(60)


def add(x, y):
    return _launch(x, y, torch.empty(x.numel(), dtype=x.dtype, device=x.device))
