# Bug: a looped kernel that finds the row maximum correctly over all tiles, but
# in the sum loop assigns instead of accumulating (s = ... rather than s += ...),
# so it normalizes by the sum of the last column tile only. Right while a row
# fits in one tile of 1024; from N = 1025 on, the outputs are far too large.
# expect: block-edges:
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, N, sx, so, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    m = -float("inf")
    for start in range(0, N, BLOCK):
        offs = start + cols
        x = tl.load(x_ptr + row * sx + offs, mask=offs < N, other=-float("inf")).to(tl.float32)
        m = tl.maximum(m, tl.max(x, axis=0))
    s = 0.0
    for start in range(0, N, BLOCK):
        offs = start + cols
        x = tl.load(x_ptr + row * sx + offs, mask=offs < N, other=-float("inf")).to(tl.float32)
        s = tl.sum(tl.exp(x - m), axis=0)
    for start in range(0, N, BLOCK):
        offs = start + cols
        mask = offs < N
        x = tl.load(x_ptr + row * sx + offs, mask=mask, other=-float("inf")).to(tl.float32)
        tl.store(out_ptr + row * so + offs, (tl.exp(x - m) / s).to(out_ptr.dtype.element_ty), mask=mask)


def softmax(x):
    M, N = x.shape
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    softmax_kernel[(M,)](x, out, N, x.stride(0), out.stride(0), BLOCK=1024)
    return out
