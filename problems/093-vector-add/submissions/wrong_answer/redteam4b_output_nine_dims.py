"""Red team 4b: the right sums returned as a view of nine dimensions (n, 1, 1, 1, 1, 1, 1, 1, 1): a wrong shape, an
honest mistake. Once RJ (the wire bounds a shape at eight sizes: "the worker's reply was not valid"); now such a
tensor crosses as its descriptor alone (judge.shared.wire.can_carry) and the output rule names its shape: WA."""
# expect: out has shape (
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
    return out.view(x.numel(), 1, 1, 1, 1, 1, 1, 1, 1)
