"""Red team 4: returns an empty tensor on the meta device (an allowed allocation), of the right shape and dtype,
after an honest launch. Once RTE (the worker failed to send it); now the worker describes such a tensor without
its values (judge.untrusted.outputs) and the output rule names its device: WA."""
# expect: out is on meta
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, sx, sy, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * sx, mask=mask) + tl.load(y_ptr + offs * sy, mask=mask), mask=mask)


def _launch(x, y, out):
    n = x.numel()
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, x.stride(0), y.stride(0), BLOCK=1024)
    return out



def add(x, y):
    _launch(x, y, torch.empty(x.numel(), dtype=x.dtype, device=x.device))
    return torch.empty(x.numel(), dtype=x.dtype, device="meta")
