# A kernel that does nothing but is handed the output, while Tensor.map_ adds in
# Python callbacks: no PyTorch operator is dispatched for them, so the operator
# watch sees only a clone, and the output counts as given to a kernel. Replayed
# alone on fresh inputs, the recorded launches leave the clone of x in out.
# expect: map_
import torch
import triton
import triton.language as tl


@triton.jit
def touch_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.load(out_ptr + offs, mask=offs < n)


def add(x, y):
    out = x.clone()
    out.map_(y, lambda a, b: a + b)
    n = out.numel()
    touch_kernel[(triton.cdiv(n, 1024),)](out, n, BLOCK=1024)
    return out
