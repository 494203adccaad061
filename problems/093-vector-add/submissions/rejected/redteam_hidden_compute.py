# A kernel launched on the output does real work (a copy), but the values it
# copies were computed in a scratch buffer by Tensor.map2_, whose Python
# callbacks no operator watch sees. Replayed alone on fresh inputs, the scratch
# buffer is fresh memory (NaN), and so is what the kernel copies.
# expect: map2_
import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


def add(x, y):
    n = x.numel()
    scratch = torch.empty(n, dtype=x.dtype, device=x.device)
    scratch.map2_(x, y, lambda _, a, b: a + b)
    out = torch.empty(n, dtype=x.dtype, device=x.device)
    copy_kernel[(triton.cdiv(n, 1024),)](scratch, out, n, BLOCK=1024)
    return out
