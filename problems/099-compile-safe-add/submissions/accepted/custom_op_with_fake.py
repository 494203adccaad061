"""Accepted: torch.library.custom_op, which torch.compile keeps opaque (it never traces into the body), so
it needs a fake implementation for shape inference (register_fake); the gradient through register_autograd
with a setup_context that saves nothing. The kernel uses a grid function and int64 offsets."""

import torch
import triton
import triton.language as tl


@triton.jit
def vadd(a_ptr, b_ptr, c_ptr, n, sa, sb, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    keep = offs < n
    a = tl.load(a_ptr + offs * sa, mask=keep)
    b = tl.load(b_ptr + offs * sb, mask=keep)
    tl.store(c_ptr + offs, a + b, mask=keep)


def register(namespace):
    @torch.library.custom_op(f"{namespace}::vadd", mutates_args=())
    def op(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        c = torch.empty(a.shape, dtype=a.dtype, device=a.device)
        n = a.numel()
        vadd[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](a, b, c, n, a.stride(0), b.stride(0), BLOCK=512)
        return c

    @op.register_fake
    def _(a, b):
        return torch.empty(a.shape, dtype=a.dtype, device=a.device)

    def setup_context(ctx, inputs, output):
        pass

    def backward(ctx, grad):
        return grad, grad

    op.register_autograd(backward, setup_context=setup_context)
    return op
