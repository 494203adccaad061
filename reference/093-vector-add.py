"""Reference solution for problem 93 (vector add): the speed bar and proof of solvability.

One program per BLOCK elements, masked at the tail, strides honoured so views
work without a copy. Large blocks with several warps keep enough bytes in
flight to saturate HBM on a big vector.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n, stride_x, stride_y, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    # int64 offsets: pid * BLOCK overflows int32 past 2^31 elements.
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * stride_x, mask=mask)
    y = tl.load(y_ptr + offs * stride_y, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    n = x.numel()
    out = torch.empty(n, dtype=x.dtype, device=x.device)
    block = 4096 if n >= 1 << 20 else 1024
    grid = (triton.cdiv(n, block),)
    _add_kernel[grid](x, y, out, n, x.stride(0), y.stride(0), BLOCK=block, num_warps=8 if block == 4096 else 4)
    return out
