# Bug: the grid is n // BLOCK, so the last partial block is never launched and
# the tail of `out` is never written (it reads back as NaN).
# expect: never written
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, sx, sy, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * sx, mask=mask) + tl.load(y_ptr + offs * sy, mask=mask), mask=mask)


def add(x, y):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    grid = (max(n // 128, 1),)
    add_kernel[grid](x, y, out, n, x.stride(0), y.stride(0), BLOCK=128)
    return out
