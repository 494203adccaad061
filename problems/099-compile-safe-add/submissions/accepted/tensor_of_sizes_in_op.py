"""Honest: the reference with torch.tensor inside its operator (issue 40): torch.tensor is an allocation, allowed in
problem 93's call, and allowed inside a registered operator too (its last step, detach_, only changes autograd's
metadata; the operator watch, run below autograd inside the operator, saw it and called the file RJ).

The launch is wrapped in torch.library.triton_op, so torch.compile sees one operator of ours instead of
untraceable Python (and, on a GPU, Inductor can inline the kernel into its own graph through wrap_triton);
register_autograd gives it the gradient of an add, which passes the incoming gradient to both inputs.
"""

import torch
import triton
import triton.language as tl
from torch.library import register_autograd, triton_op, wrap_triton


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n, stride_x, stride_y, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * stride_x, mask=mask)
    y = tl.load(y_ptr + offs * stride_y, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def _backward(ctx, grad):
    # d(x + y)/dx = d(x + y)/dy = 1: each input gets the incoming gradient as it is.
    return grad, grad


def register(namespace: str):
    name = f"{namespace}::add"

    @triton_op(name, mutates_args=())
    def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        n = x.numel()
        sizes = torch.tensor([n], device=x.device)  # the size as a tensor: an allocation, as in problem 93
        out = torch.empty(n, dtype=x.dtype, device=x.device)
        block = 1024
        wrap_triton(_add_kernel)[(triton.cdiv(n, block),)](x, y, out, n, x.stride(0), y.stride(0), BLOCK=block)
        return out

    register_autograd(name, _backward)
    return add
