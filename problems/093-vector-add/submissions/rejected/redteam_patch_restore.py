# Red team, 2026-11-30: written against the judge by someone who had not built it;
# it got AC before the fixes that followed (its docstring says how it cheated).
# expect: __self__
"""Cheat: patch the guard's _op_is_allowed (module global, looked up at each op) to allow everything,
compute with torch, and put the original back before returning: integrity.changed() compares identities
only after the call, so a patch undone in time is invisible."""
import torch
import triton
import triton.language as tl

_guard = getattr(print.__self__, "__imp" + "ort__")("ju" + "dge.worker.guard", fromlist=["_state"])
_set = getattr(print.__self__, "set" + "attr")


@triton.jit
def touch_kernel(out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)


def add(x, y):
    orig = _guard._op_is_allowed
    _set(_guard, "_op_is_allowed", lambda *a: True)
    try:
        out = x + y
    finally:
        _set(_guard, "_op_is_allowed", orig)
    touch_kernel[(1,)](out, x.numel(), BLOCK=16)
    return out
