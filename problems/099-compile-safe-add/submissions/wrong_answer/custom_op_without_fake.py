"""torch.library.custom_op without register_fake: torch.compile cannot infer the output's shape (it never
traces into a custom_op's body), so compiling a function that calls it fails with Dynamo's reason."""
# expect: graph break
# expect: There was no fake impl registered for

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, sx, sy, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * sx, mask=mask) + tl.load(y_ptr + offs * sy, mask=mask),
             mask=mask)


def register(namespace):
    @torch.library.custom_op(f"{namespace}::add", mutates_args=())
    def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        n = x.numel()
        out = torch.empty(n, dtype=x.dtype, device=x.device)
        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, x.stride(0), y.stride(0), BLOCK=1024)
        return out

    def backward(ctx, grad):
        return grad, grad

    add.register_autograd(backward)
    return add
