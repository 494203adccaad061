# Bug: the load mask compares the column with the row stride instead of the row
# length (cols < x.stride(0)). On contiguous rows the two are equal; on padded
# rows (stride N + 3) each row also reads the 3 NaN the judge puts in the gap
# after it, and one NaN in the max and the sum makes the whole row NaN. The
# hint must say that the kernel reads past the end of each row.
# expect: reads past the end of each row
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, sx, so, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * sx + cols, mask=cols < sx, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    out = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * so + cols, out.to(out_ptr.dtype.element_ty), mask=cols < n_cols)


def softmax(x):
    M, N = x.shape
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    block = triton.next_power_of_2(x.stride(0))
    softmax_kernel[(M,)](x, out, N, x.stride(0), out.stride(0), BLOCK=block)
    return out
