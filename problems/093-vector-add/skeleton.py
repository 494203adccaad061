"""Problem 93 - vector addition. Fill in the kernel, then: python -m judge submit 93 this_file.py"""

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, stride_x, stride_y, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    # TODO: load x and y (mind the tail: n need not be a multiple of BLOCK,
    # and the inputs may be strided views), add, and store into out.


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    n = x.numel()
    out = torch.empty(n, dtype=x.dtype, device=x.device)
    BLOCK = 1024
    grid = (triton.cdiv(n, BLOCK),)
    add_kernel[grid](x, y, out, n, x.stride(0), y.stride(0), BLOCK=BLOCK)
    return out
