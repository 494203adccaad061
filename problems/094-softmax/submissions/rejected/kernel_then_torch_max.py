# Launches a real kernel for the exponentials and the division, but finds the
# row maxima with x.amax(dim=1) in the wrapper: a PyTorch reduction outside the
# kernel is not allowed.
# expect: PyTorch operators
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, max_ptr, out_ptr, n_cols, sx, so, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * sx + cols, mask=mask, other=-float("inf")).to(tl.float32)
    num = tl.exp(x - tl.load(max_ptr + row).to(tl.float32))
    tl.store(out_ptr + row * so + cols, (num / tl.sum(num, axis=0)).to(out_ptr.dtype.element_ty), mask=mask)


def softmax(x):
    M, N = x.shape
    row_max = x.amax(dim=1)
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    softmax_kernel[(M,)](x, row_max, out, N, x.stride(0), out.stride(0), BLOCK=triton.next_power_of_2(N))
    return out
