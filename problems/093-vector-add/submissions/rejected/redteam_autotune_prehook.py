# Red team, 2026-11-30: written against the judge by someone who had not built it;
# it got AC before the fixes that followed (its docstring says how it cheated).
# expect: torch add
"""Cheat: torch computes the sum in an autotune Config pre_hook (runs inside Autotuner.run, where the
judge raises depth and the op watch is off). The kernel itself does nothing."""
import torch
import triton
import triton.language as tl


def _hook(args):
    args["out_ptr"].copy_(args["x_ptr"] + args["y_ptr"])


@triton.autotune(configs=[triton.Config({"BLOCK": 16}, pre_hook=_hook)], key=["n"])
@triton.jit
def touch_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)


def add(x, y):
    out = torch.empty(x.numel(), dtype=x.dtype, device=x.device)
    touch_kernel[(1,)](x, y, out, x.numel())
    return out
