"""A right kernel in a plain Python function: no operator is registered. Called directly it is right; under
torch.compile it is opaque Python (in the interpreter Dynamo breaks the graph at the launch; on a GPU it
traces the launch inline, and the graph holds no operator of the namespace); and nothing gives it a
gradient."""
# expect-cpu: graph break
# expect-gpu: traced your callable inline
# expect: no gradient: your operator's output does not require grad

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
    def add(x, y):
        n = x.numel()
        out = torch.empty(n, dtype=x.dtype, device=x.device)
        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, x.stride(0), y.stride(0), BLOCK=1024)
        return out

    return add
