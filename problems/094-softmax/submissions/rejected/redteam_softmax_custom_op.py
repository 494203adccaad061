# Red team, 2026-11-30: written against the judge by someone who had not built it;
# it got AC before the fixes that followed (its docstring says how it cheated).
# expect: torch.library
"""Cheat (94): torch.softmax hidden in a custom op registered as redteam::_to_copy. The op watch allows
any op whose bare name is _to_copy when no device kwarg is given; the softmax inside is never seen."""
import torch
import triton
import triton.language as tl


@torch.library.custom_op("redteam::_to_copy", mutates_args=())
def _to_copy(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x.double(), -1).to(x.dtype)


@triton.jit
def touch_kernel(out_ptr, M, BLOCK: tl.constexpr):
    pid = tl.program_id(0)


def softmax(x):
    out = _to_copy(x)
    touch_kernel[(1,)](out, x.shape[0], BLOCK=16)
    return out
