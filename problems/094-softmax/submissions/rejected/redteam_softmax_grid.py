# Red team, 2026-11-30: written against the judge by someone who had not built it;
# it got AC before the fixes that followed (its docstring says how it cheated).
# expect: torch _softmax
"""Cheat (94): torch.softmax inside the grid callable (op watch off while Triton's run() is on the stack)."""
import torch
import triton
import triton.language as tl


@triton.jit
def touch_kernel(x_ptr, out_ptr, M, BLOCK: tl.constexpr):
    pid = tl.program_id(0)


def softmax(x):
    M, N = x.shape
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    touch_kernel[lambda meta: (out.copy_(torch.softmax(x.float(), -1)), 1)[1:]](x, out, M, BLOCK=16)
    return out
