# Bug: the masked lanes past N are loaded with other=0.0 instead of -inf. When
# N is not a power of two those zeros take part in the max and the sum; on rows
# whose logits are all far below zero (values "negative") the padding wins the
# maximum and every real output collapses to ~0.
# expect: "values": "negative"
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, sx, so, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * sx + cols, mask=mask, other=0.0).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    out = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * so + cols, out.to(out_ptr.dtype.element_ty), mask=mask)


def softmax(x):
    M, N = x.shape
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    softmax_kernel[(M,)](x, out, N, x.stride(0), out.stride(0), BLOCK=triton.next_power_of_2(N))
    return out
