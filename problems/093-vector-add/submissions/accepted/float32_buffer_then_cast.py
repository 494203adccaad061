# Adds in a float32 buffer, then casts it to the input dtype with .to(): a copy of
# a buffer the kernel wrote is the kernel's output (allowed).
import torch, triton, triton.language as tl

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, sx, sy, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * sx, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offs * sy, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, x + y, mask=mask)

def add(x, y):
    n = x.numel()
    out = torch.empty(n, dtype=torch.float32, device=x.device)
    add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, x.stride(0), y.stride(0), BLOCK=256)
    return out.to(x.dtype)
