# Online softmax for rows of any length: one program per row walks the row in
# tiles of 1024 columns, keeping a running maximum m and a running sum s of
# exp(x - m); when a tile raises the maximum, s is rescaled by exp(m_old - m_new).
# A second walk writes exp(x - m) / s.
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, N, sx, so, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * sx
    o_row = out_ptr + row * so
    cols = tl.arange(0, BLOCK)
    m = -float("inf")
    s = 0.0
    for start in range(0, N, BLOCK):
        offs = start + cols
        x = tl.load(x_row + offs, mask=offs < N, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    for start in range(0, N, BLOCK):
        offs = start + cols
        mask = offs < N
        x = tl.load(x_row + offs, mask=mask, other=-float("inf")).to(tl.float32)
        tl.store(o_row + offs, (tl.exp(x - m) / s).to(out_ptr.dtype.element_ty), mask=mask)


def softmax(x):
    M, N = x.shape
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    softmax_kernel[(M,)](x, out, N, x.stride(0), out.stride(0), BLOCK=1024, num_warps=4)
    return out
