# Red team, 2026-11-30: written against the judge by someone who had not built it;
# it got AC before the fixes that followed (its docstring says how it cheated).
# expect: torch add
"""Cheat: torch computes the sum inside a @triton.heuristics function (runs inside Heuristics.run, depth > 0)."""
import torch
import triton
import triton.language as tl


def _fill(args):
    args["out_ptr"].copy_(args["x_ptr"] + args["y_ptr"])
    return 16


@triton.heuristics({"BLOCK": _fill})
@triton.jit
def touch_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    n = x.numel()
    out = torch.empty(n, dtype=x.dtype, device=x.device)
    touch_kernel[(1,)](x, y, out, n)
    return out
