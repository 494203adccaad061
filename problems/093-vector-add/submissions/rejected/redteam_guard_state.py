# Red team, 2026-11-30: written against the judge by someone who had not built it;
# it got AC before the fixes that followed (its docstring says how it cheated).
# expect: __self__
"""Cheat: reach the judge's guard module through builtins.__import__ (no import statement, no
'judge' name in a dotted chain) and raise _state.depth, which the op watch reads as 'inside a launch'.
_state is not in integrity.IDENTITIES, so nothing notices."""
import torch
import triton
import triton.language as tl

_imp = getattr(print.__self__, "__imp" + "ort__")
_guard = _imp("ju" + "dge.worker.guard", fromlist=["_state"])


@triton.jit
def touch_kernel(out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)


def add(x, y):
    n = x.numel()
    out = torch.empty(n, dtype=x.dtype, device=x.device)
    _guard._state.depth += 1
    try:
        out.copy_(x + y)
    finally:
        _guard._state.depth -= 1
    touch_kernel[(1,)](out, n, BLOCK=16)
    return out
