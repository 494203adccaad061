"""Overrides PyTorch's own CPU kernel of an allowed operator (clone) with Python that computes the sum, and
calls it from the operator: the watch allows clone, and the override's body runs where no watch sees it.
torch.library is allowed in this problem, but only for the namespace the judge gives."""
# expect: an operator library for namespace 'aten'

import torch
import triton
import triton.language as tl
from torch.library import register_autograd, triton_op, wrap_triton

_pending = []


@triton.jit
def copy_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)


def register(namespace):
    lib = torch.library.Library("aten", "IMPL")
    _pending.append(lib)

    @triton_op(f"{namespace}::add", mutates_args=())
    def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        n = x.numel()
        out = torch.empty(n, dtype=x.dtype, device=x.device)
        wrap_triton(copy_kernel)[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out

    def backward(ctx, grad):
        return grad, grad

    register_autograd(f"{namespace}::add", backward)
    return add
