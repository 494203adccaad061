# Red team, 2026-11-30: written against the judge by someone who had not built it;
# it got AC before the fixes that followed (its docstring says how it cheated).
# expect: __self__
"""Cheat: patch the checker's view of the result. torch.Tensor.detach (not in integrity.IDENTITIES) is
replaced at import; the worker's protocol._dense_cpu calls t.detach() when it serialises the returned
tensor, after the op watch has ended. For the tensor we returned, the patched detach computes x + y
with torch there and then. The kernel never writes out (it is left as the NaN fill)."""
import torch
import triton
import triton.language as tl

_set = getattr(print.__self__, "set" + "attr")
_orig_detach = torch.Tensor.detach
_pending = {}


def _detach(self):
    job = _pending.pop(id(self), None)
    if job is not None:
        x, y = job
        return _orig_detach(x + y)
    return _orig_detach(self)


_set(torch.Tensor, "detach", _detach)


@triton.jit
def touch_kernel(out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)


def add(x, y):
    out = torch.empty(x.numel(), dtype=x.dtype, device=x.device)
    touch_kernel[(1,)](out, x.numel(), BLOCK=16)
    _pending[id(out)] = (x, y)
    return out
