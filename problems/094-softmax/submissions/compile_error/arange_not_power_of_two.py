# Bug: the block is the row length itself (BLOCK = N) instead of
# next_power_of_2(N). tl.arange needs a power-of-two length, so the kernel does
# not compile as soon as N is not a power of two (N = 3, 100, ...).
# expect: power of 2
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, sx, so, N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, N)
    x = tl.load(x_ptr + row * sx + cols).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * so + cols, (num / tl.sum(num, axis=0)).to(out_ptr.dtype.element_ty))


def softmax(x):
    M, N = x.shape
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    softmax_kernel[(M,)](x, out, x.stride(0), out.stride(0), N=N)
    return out
