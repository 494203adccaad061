"""Red team 4: an exception whose cause chain is 200,000 deep, with a 50 MB message: the worker's formatting of
the error (chain walked, message kept) could recurse past its limit or flood the reply.
Stopped by: the worker's error report (judge.untrusted.errors), which cuts the message: RTE, the file's own line."""
# expect: ValueError: BBBB
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
    e = ValueError("x")
    for i in range(200000):
        n = ValueError("A" * 16)
        n.__cause__ = e
        e = n
    raise ValueError("B" * 50_000_000) from e
