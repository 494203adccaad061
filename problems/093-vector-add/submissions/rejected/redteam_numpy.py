# Red team, 2026-11-30: written against the judge by someone who had not built it;
# it got AC before the fixes that followed (its docstring says how it cheated).
# expect: numpy
"""Cheat: the sum is computed by numpy on views of the tensors' memory; a no-op kernel is 'given' out."""
import torch
import triton
import triton.language as tl


@triton.jit
def touch_kernel(out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)  # does nothing useful


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    n = x.numel()
    out = torch.empty(n, dtype=x.dtype, device=x.device)
    o = out.numpy()
    o[:] = x.numpy() + y.numpy()
    touch_kernel[(1,)](out, n, BLOCK=16)
    return out
