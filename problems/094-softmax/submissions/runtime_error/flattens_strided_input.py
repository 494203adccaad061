# Bug: flattens the input with x.view(-1) to index it as one long vector.
# .view cannot flatten rows that are not back to back (x.stride(0) == N + 3),
# so PyTorch raises a RuntimeError on the strided cases. (.reshape would copy,
# and the kernel would then be right.)
# expect: view size is not compatible
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * n_cols + cols, (num / tl.sum(num, axis=0)).to(out_ptr.dtype.element_ty), mask=mask)


def softmax(x):
    M, N = x.shape
    flat = x.view(-1)
    out = torch.empty(M * N, dtype=x.dtype, device=x.device)
    softmax_kernel[(M,)](flat, out, N, BLOCK=triton.next_power_of_2(N))
    return out.view(M, N)
