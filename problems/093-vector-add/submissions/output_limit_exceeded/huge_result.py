# Returns a result hundreds of times larger than any right answer: the judge
# refuses to read it (the reply's declared size is checked before its bytes).
# expect: declares
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, sx, sy, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * sx, mask=mask) + tl.load(y_ptr + offs * sy, mask=mask), mask=mask)


def add(x, y):
    n = x.numel()
    out = torch.empty(1 << 26, dtype=x.dtype, device=x.device)
    add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, x.stride(0), y.stride(0), BLOCK=256)
    return out
