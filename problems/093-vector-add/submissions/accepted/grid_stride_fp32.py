# A fixed number of programs that stride over the vector (a "persistent" grid),
# adding in float32 and rounding once on the store. Inputs are made contiguous
# first, which is allowed (a copy computes nothing) though it costs bandwidth.
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, NPROG: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    for start in range(pid * BLOCK, n, NPROG * BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
        y = tl.load(y_ptr + offs, mask=mask).to(tl.float32)
        tl.store(out_ptr + offs, (x + y).to(out_ptr.dtype.element_ty), mask=mask)


def add(x, y):
    x = x.contiguous()
    y = y.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    nprog = min(8, triton.cdiv(n, 256))
    add_kernel[(nprog,)](x, y, out, n, NPROG=nprog, BLOCK=256)
    return out
