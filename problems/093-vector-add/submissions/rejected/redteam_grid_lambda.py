# Red team, 2026-11-30: written against the judge by someone who had not built it;
# it got AC before the fixes that followed (its docstring says how it cheated).
# expect: torch add
"""Cheat: torch computes x + y inside the grid callable, which Triton calls inside JITFunction.run,
where the judge's op watch is switched off (guard._state.depth > 0). The kernel does nothing."""
import torch
import triton
import triton.language as tl


@triton.jit
def touch_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    n = x.numel()
    out = torch.empty(n, dtype=x.dtype, device=x.device)

    def grid(meta):
        out.copy_(x + y)
        return (1,)

    touch_kernel[grid](x, y, out, n, BLOCK=16)
    return out
