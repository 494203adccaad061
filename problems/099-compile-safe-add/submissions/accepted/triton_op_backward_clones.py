"""Accepted: triton_op imported as ``from torch import library``, a helper that allocates the output, the
launch through wrap_triton, and a backward that hands each input its own copy of the incoming gradient
(allowed: the backward may use PyTorch operators)."""

import torch
import triton
import triton.language as tl
from torch import library


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, sx, sy, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * sx, mask=mask) + tl.load(y_ptr + offs * sy, mask=mask),
             mask=mask)


def _new_like(x):
    return torch.empty(x.numel(), dtype=x.dtype, device=x.device)


def register(namespace):
    qualname = namespace + "::add_vectors"

    @library.triton_op(qualname, mutates_args={})
    def add_vectors(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = _new_like(x)
        n = out.numel()
        library.wrap_triton(add_kernel)[(triton.cdiv(n, 256),)](x, y, out, n, x.stride(0), y.stride(0), BLOCK=256)
        return out

    def backward(ctx, grad):
        return grad.clone(), grad.clone()

    library.register_autograd(qualname, backward)
    return add_vectors
