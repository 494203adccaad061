# Bug: normalizes over the wrong axis - one program per COLUMN, reducing down
# the rows (softmax(x, dim=0)), the launch grid and strides swapped with it.
# With M == 1 every output becomes 1.0, so it is right only for a 1 x 1 input.
# expect: small-ragged:
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, M, sx, so, BLOCK: tl.constexpr):
    col = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK)
    mask = rows < M
    x = tl.load(x_ptr + rows * sx + col, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    out = num / tl.sum(num, axis=0)
    tl.store(out_ptr + rows * so + col, out.to(out_ptr.dtype.element_ty), mask=mask)


def softmax(x):
    M, N = x.shape
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    softmax_kernel[(N,)](x, out, M, x.stride(0), out.stride(0), BLOCK=triton.next_power_of_2(M))
    return out
