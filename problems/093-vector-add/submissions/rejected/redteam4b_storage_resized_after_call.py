"""Red team 4b: the output's storage resized to 0 bytes after the launch (a tensor whose shape outruns its
memory), for the worker's own read of it to fail mid-protocol.
Stopped by: the static scan (untyped_storage)."""
# expect: untyped_storage
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
    out = _launch(x, y, torch.empty(x.numel(), dtype=x.dtype, device=x.device))
    out.untyped_storage().resize_(0)
    return out
