"""A registered operator with a gradient whose body computes the sum with PyTorch (a kernel is launched, but
only as a decoy): the operator watch looks inside the submission's own operators."""
# expect: the answer was computed with PyTorch operators (torch add)

import torch
import triton
import triton.language as tl
from torch.library import register_autograd, triton_op, wrap_triton


@triton.jit
def touch_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(out_ptr + offs, mask=offs < n), mask=offs < n)


def register(namespace):
    @triton_op(f"{namespace}::add", mutates_args=())
    def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = x + y
        n = out.numel()
        wrap_triton(touch_kernel)[(triton.cdiv(n, 1024),)](out, n, BLOCK=1024)
        return out

    def backward(ctx, grad):
        return grad, grad

    register_autograd(f"{namespace}::add", backward)
    return add
