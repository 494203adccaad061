# Bug: the weight is loaded but never multiplied in: y = x * rstd. Every element
# whose weight is not 1 is off by that factor (small-ragged group, first case).
# expect: small-ragged
import torch
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, n_cols, stride_x, stride_y, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(y_ptr + row * stride_y + cols, (x * rstd).to(y_ptr.dtype.element_ty), mask=mask)


def rmsnorm(x, weight, eps):
    M, N = x.shape
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    rmsnorm_kernel[(M,)](x, weight, y, N, x.stride(0), y.stride(0), eps, BLOCK=triton.next_power_of_2(N))
    return y
