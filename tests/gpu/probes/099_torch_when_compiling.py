"""Problem 99 probe for a GPU (not in the corpus: its verdict depends on the device). The operator launches
its kernel when called, but while torch.compile traces it (AOTAutograd's functional decomposition on the
way to Inductor) it returns x + y, which Inductor then computes with a kernel of its own. On a GPU the
lowered graph shows the add: RJ. In the interpreter Dynamo's graph runs eagerly and the operator's honest
path is what runs: AC there, rightly (nothing but the kernel computed anything)."""
# expect-gpu: add (in the graph Inductor compiled)

import torch
import triton
import triton.language as tl
from torch.library import register_autograd, triton_op, wrap_triton


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, sx, sy, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * sx, mask=mask) + tl.load(y_ptr + offs * sy, mask=mask), mask=mask)


def register(namespace):
    @triton_op(f"{namespace}::add", mutates_args=())
    def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if torch.compiler.is_compiling():
            return x + y
        n = x.numel()
        out = torch.empty(n, dtype=x.dtype, device=x.device)
        wrap_triton(add_kernel)[(triton.cdiv(n, 1024),)](x, y, out, n, x.stride(0), y.stride(0), BLOCK=1024)
        return out

    register_autograd(f"{namespace}::add", lambda ctx, grad: (grad, grad))
    return add
