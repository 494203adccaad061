# Launches a real kernel (to look busy) but builds the answer with torch.add.
# expect: torch add
import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def add(x, y):
    tmp = torch.empty_like(x)
    copy_kernel[(triton.cdiv(x.numel(), 256),)](x, tmp, x.numel(), BLOCK=256)
    return torch.add(x, y)
