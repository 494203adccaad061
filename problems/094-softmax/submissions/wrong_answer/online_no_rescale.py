# Bug: in the online (tiled) pass the running sum is not rescaled when a tile
# raises the running maximum: s += sum(exp(x - m_new)) instead of
# s = s * exp(m_old - m_new) + sum(exp(x - m_new)). Terms summed before the
# maximum grew stay too large, so the sum is too big and every output too
# small. Right whenever the first tile holds the maximum; logits that rise
# along the row (values "ramp") raise the maximum in every tile.
# expect: "values": "ramp"
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, N, sx, so, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    m = -float("inf")
    s = 0.0
    for start in range(0, N, BLOCK):
        offs = start + cols
        x = tl.load(x_ptr + row * sx + offs, mask=offs < N, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
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
