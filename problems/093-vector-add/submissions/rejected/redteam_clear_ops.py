# Red team, 2026-11-30: written against the judge by someone who had not built it;
# it got AC before the fixes that followed (its docstring says how it cheated).
# expect: __self__
"""Cheat: compute with plain torch in the open, then erase the evidence: the running Watch object
(guard._state.watch, reached via builtins.__import__) has its ops Counter cleared before returning."""
import torch
import triton
import triton.language as tl

_guard = getattr(print.__self__, "__imp" + "ort__")("ju" + "dge.worker.guard", fromlist=["_state"])


@triton.jit
def touch_kernel(out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)


def add(x, y):
    out = x + y
    touch_kernel[(1,)](out, x.numel(), BLOCK=16)
    _guard._state.watch.ops.clear()
    return out
