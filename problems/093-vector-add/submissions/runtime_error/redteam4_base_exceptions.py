"""Red team 4: a BaseException out of the call (KeyboardInterrupt; SystemExit(0) was tried too), which an
except Exception in the worker would let through to kill it (a clean exit, status 0, in the middle of a case).
Stopped by: the worker takes it as the file's error: RTE naming the line."""
# expect: KeyboardInterrupt
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


def add(x, y):
    raise KeyboardInterrupt
