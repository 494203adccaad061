# Red team, 2026-11-30: written against the judge by someone who had not built it;
# it got AC before the fixes that followed (its docstring says how it cheated).
# expect: __self__
"""Cheat: no Triton kernel at all. The guard's own _record_launch is called with a fake 'kernel'
whose .fn is a plain function of this file, so the evidence shows an own launch that was given out;
the sum is computed by torch with the op watch bypassed (depth raised). Nothing patched, so the
integrity check sees no change."""
import torch

_imp = getattr(print.__self__, "__imp" + "ort__")
_guard = _imp("ju" + "dge.worker.guard", fromlist=["_state"])


class _Fake:
    pass


def add(x, y):
    out = torch.empty(x.numel(), dtype=x.dtype, device=x.device)
    _guard._state.depth += 1
    try:
        out.copy_(x + y)
    finally:
        _guard._state.depth -= 1
    k = _Fake()
    k.fn = add
    _guard._record_launch(k, (out,), {})
    return out
