# Bug: the mean of squares divides by BLOCK (the padded power of two) instead of
# the true row length n. Right when n is a power of two, wrong otherwise: n = 1000
# in a 1024 block makes every output about 1.2% too large (small-ragged group).
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
    mean_sq = tl.sum(x * x, axis=0) / BLOCK
    rstd = 1.0 / tl.sqrt(mean_sq + eps)
    y = x * rstd * w
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def rmsnorm(x, weight, eps):
    M, N = x.shape
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    rmsnorm_kernel[(M,)](x, weight, y, N, x.stride(0), y.stride(0), eps, BLOCK=triton.next_power_of_2(N))
    return y
