"""Problem 99 - a torch.compile-safe custom operator. Fill in the TODOs, then:
python -m judge submit 99 this_file.py"""

import torch
import triton
import triton.language as tl
from torch.library import register_autograd, triton_op, wrap_triton


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, stride_x, stride_y, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    # TODO: load x and y (mind the tail and the strides), add, and store into out.


def register(namespace: str):
    """Register the operator as f"{namespace}::add" and return it; the judge calls op(x, y)."""
    name = f"{namespace}::add"

    @triton_op(name, mutates_args=())
    def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        n = x.numel()
        out = torch.empty(n, dtype=x.dtype, device=x.device)
        BLOCK = 1024
        wrap_triton(add_kernel)[(triton.cdiv(n, BLOCK),)](x, y, out, n, x.stride(0), y.stride(0), BLOCK=BLOCK)
        return out

    def backward(ctx, grad):
        # TODO: the gradients of x + y with respect to x and to y.
        raise NotImplementedError

    register_autograd(name, backward)
    return add
