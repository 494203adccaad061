"""Red team 4b: an honest launch, then a one-element tensor expanded to 2**41 elements returned (a view: no memory).
Once MLE (the worker tried to make 8 TiB of it dense to send it); now a shape the wire cannot carry crosses as its
descriptor alone and the output rule names it: WA."""
# expect: out has shape (2199023255552,)
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
    _launch(x, y, torch.empty(x.numel(), dtype=x.dtype, device=x.device))
    return torch.empty(1, dtype=x.dtype, device=x.device).expand(1 << 41)
