"""Red team 4: register_fake says the operator returns n + 1 float64 elements; the real one returns n of the input's
dtype. Once AC in the interpreter (the eager backend runs the real op). Such an op is not compile-safe: what
torch.compile plans around it follows the fake. The compiled call holds each output against what the traced graph
promised (judge.untrusted.compiled): WA in the compiled group, naming the fake."""
# expect: from your operator's fake implementation
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
        return torch.empty(a.numel() + 1, dtype=torch.float64, device=a.device)  # not what the op returns

    def setup_context(ctx, inputs, output):
        pass

    def backward(ctx, grad):
        return grad, grad

    op.register_autograd(backward, setup_context=setup_context)
    return op
