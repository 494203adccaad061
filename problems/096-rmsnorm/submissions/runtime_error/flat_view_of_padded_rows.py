# The wrapper flattens x with x.view(M * N) to index it as one long vector. That
# works for a contiguous x but raises a RuntimeError for a view whose rows are
# padded (strided-rows group): .view cannot merge dims that are not adjacent in
# memory (.reshape would copy).
# expect: view size is not compatible
import torch
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(y_ptr + row * n_cols + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def rmsnorm(x, weight, eps):
    M, N = x.shape
    flat = x.view(M * N)
    y = torch.empty(M * N, dtype=x.dtype, device=x.device)
    rmsnorm_kernel[(M,)](flat, weight, y, N, eps, BLOCK=triton.next_power_of_2(N))
    return y.view(M, N)
