# Red team, 2026-11-30: written against the judge by someone who had not built it;
# it got AC before the fixes that followed (its docstring says how it cheated).
# expect: torch.library
"""Cheat: a custom operator registered with the public torch.library API under the name 'clone'.
The op watch checks only func.overloadpacket.__name__ (no namespace), so redteam::clone passes as
an allowed op; inside it the dispatch mode is suspended, so the x + y it runs is never seen."""
import torch
import triton
import triton.language as tl


@torch.library.custom_op("redteam::clone", mutates_args=())
def clone(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x + y


@triton.jit
def touch_kernel(out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)


def add(x, y):
    out = clone(x, y)
    touch_kernel[(1,)](out, x.numel(), BLOCK=16)
    return out
