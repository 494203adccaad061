# Red team, 2026-11-30: written against the judge by someone who had not built it;
# it got AC before the fixes that followed (its docstring says how it cheated).
# expect: _C
"""Cheat: torch._C reached by getattr with a string (the scan matches dotted names only);
_DisableTorchDispatch turns off the judge's TorchDispatchMode while torch adds."""
import torch
import triton
import triton.language as tl

_C = getattr(torch, "_" + "C")


@triton.jit
def touch_kernel(out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)


def add(x, y):
    n = x.numel()
    out = torch.empty(n, dtype=x.dtype, device=x.device)
    with _C._DisableTorchDispatch():
        out.copy_(x + y)
    touch_kernel[(1,)](out, n, BLOCK=16)
    return out
