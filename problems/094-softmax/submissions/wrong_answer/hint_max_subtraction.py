# Bug: a two-pass looped softmax that sums exp(x) over the row, then writes
# exp(x) / sum, without subtracting the row maximum. Right on ordinary logits;
# exp overflows past 88 (inf / inf = NaN) and underflows to 0 on rows far
# below zero (0 / 0 = NaN). The hint must name the missing max subtraction.
# expect: without subtracting the row's maximum
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, N, sx, so, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    total = 0.0
    for start in range(0, N, BLOCK):
        offs = start + cols
        x = tl.load(x_ptr + row * sx + offs, mask=offs < N, other=-float("inf")).to(tl.float32)
        total += tl.sum(tl.exp(x), axis=0)
    for start in range(0, N, BLOCK):
        offs = start + cols
        mask = offs < N
        x = tl.load(x_ptr + row * sx + offs, mask=mask, other=-float("inf")).to(tl.float32)
        tl.store(out_ptr + row * so + offs, (tl.exp(x) / total).to(out_ptr.dtype.element_ty), mask=mask)


def softmax(x):
    M, N = x.shape
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    softmax_kernel[(M,)](x, out, N, x.stride(0), out.stride(0), BLOCK=512)
    return out
