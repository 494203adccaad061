# Bug: exp(x) / sum(exp(x)) without subtracting the row maximum first. Fine on
# ordinary logits, but exp overflows to inf for logits above ~88 (inf / inf =
# NaN) and underflows every term to 0 for logits far below zero (0 / 0 = NaN):
# the extreme-values group has both. (On a GPU, exp of unshifted logits is also
# less accurate, so ordinary float32 cases may already fail by a few ulps.)
# expect: NaN where finite values were expected
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, sx, so, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * sx + cols, mask=mask, other=-float("inf")).to(tl.float32)
    num = tl.exp(x)
    out = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * so + cols, out.to(out_ptr.dtype.element_ty), mask=mask)


def softmax(x):
    M, N = x.shape
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    softmax_kernel[(M,)](x, out, N, x.stride(0), out.stride(0), BLOCK=triton.next_power_of_2(N))
    return out
