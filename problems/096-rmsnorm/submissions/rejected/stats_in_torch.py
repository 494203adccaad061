# The kernel only scales; the row statistics (mean of squares, rsqrt) are computed
# with PyTorch in the wrapper and handed to the kernel. Computing outside the
# kernels is not allowed.
# expect: PyTorch operators
import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, w_ptr, rstd_ptr, y_ptr, n_cols, stride_x, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(rstd_ptr + row)
    tl.store(y_ptr + row * n_cols + cols, (x * r * w).to(y_ptr.dtype.element_ty), mask=mask)


def rmsnorm(x, weight, eps):
    M, N = x.shape
    rstd = torch.rsqrt(x.float().pow(2).mean(-1) + eps)
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    scale_kernel[(M,)](x, weight, rstd, y, N, x.stride(0), BLOCK=triton.next_power_of_2(N))
    return y
