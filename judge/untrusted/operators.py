"""The operator watch's rules: which PyTorch operators a wrapper may use around its kernels, and the ways
past Python dispatch (``redispatch``, per-element callbacks) that are wrapped so that a use is recorded as an
operator. The watch itself, a TorchDispatchMode, is judge.untrusted.guard.watching.
"""

from __future__ import annotations

from judge.untrusted import own_ops
from judge.untrusted.watch_state import _state

# Operators a wrapper may use around its kernels: they allocate, describe or
# move data but compute nothing from it. (detach_: torch.tensor ends with it, and inside an operator of the
# file's own, run below autograd (judge.untrusted.own_ops), the watch sees it; it changes autograd's metadata
# alone.)
ALLOWED_OPS = frozenset(
    """
    arange empty empty_like empty_strided new_empty new_empty_strided
    zeros zeros_like new_zeros ones ones_like new_ones full full_like new_full
    fill_ zero_
    view _unsafe_view reshape _reshape_alias as_strided permute transpose t
    expand expand_as select slice unsqueeze squeeze flatten unflatten narrow
    split split_with_sizes chunk unbind detach detach_ alias view_as movedim
    lift_fresh lift_fresh_copy contiguous clone copy_ _to_copy to cat stack
    sym_size sym_stride sym_numel sym_storage_offset is_contiguous
    """.split()
)


def _device_of(x):
    return getattr(x, "device", None)


def _op_name(func) -> str:
    """``add``, or ``namespace::name`` for an operator outside aten (a custom op)."""
    namespace = getattr(func, "namespace", "aten")
    name = str(func.overloadpacket.__name__)
    return name if namespace == "aten" else f"{namespace}::{name}"


def _op_is_allowed(func, args, kwargs) -> bool:
    # Only PyTorch's own operators: a custom op named "clone" is not a clone.
    if getattr(func, "namespace", None) != "aten":
        return False
    name = func.overloadpacket.__name__
    if name not in ALLOWED_OPS:
        return False
    if name == "fill_" and len(args) > 1 and hasattr(args[1], "dim"):
        return False  # fill_ from a tensor value reads data; only scalar fills
    if name == "_to_copy":
        target = kwargs.get("device")
        return target is None or _device_of(args[0]) == target
    if name == "copy_" and len(args) > 1:
        return _device_of(args[0]) == _device_of(args[1])
    return True


def _traced_op(trace, func, args, kwargs):
    """Run an operator the replay redoes, and record it (its arguments as they were before it ran)."""
    event = trace.op_before(func, args, kwargs)
    result = func(*args, **kwargs)
    trace.op_after(event, func, result)
    return result


def _watch_redispatch() -> None:
    """``OpOverload.redispatch`` sends an operator straight to a kernel below the Python dispatch key, past the
    operator watch and PyTorch's profiler alike: every use during a watched call is recorded as an operator."""
    try:
        from torch._ops import OpOverload
    except ImportError:  # pragma: no cover
        return
    original = getattr(OpOverload, "redispatch", None)
    if original is None or getattr(original, "_judge_wrapped", False):
        return

    def redispatch(self, *args, **kwargs):
        watch = _state.watch
        # PyTorch's own custom-op machinery redispatches the submission's operators (autograd, backend
        # select): their kernels still run under the watch (judge.untrusted.own_ops).
        if watch is not None and not own_ops.is_own(self):
            watch.ops[f"{_op_name(self)} (redispatched below the operator watch)"] += 1
        return original(self, *args, **kwargs)

    redispatch._judge_wrapped = True
    own_ops.configure(_state.namespace, _state.submission, original)
    OpOverload.redispatch = redispatch


def _watch_callbacks() -> None:
    """``Tensor.map_``, ``map2_`` and ``apply_`` run a Python function per element of a CPU tensor and dispatch no
    operator: every use during a watched call is recorded as an operator."""
    import torch

    for name in ("map_", "map2_", "apply_"):
        original = getattr(torch.Tensor, name, None)
        if original is None or getattr(original, "_judge_wrapped", False):
            continue

        def per_element(self, *args, _original=original, _name=name, **kwargs):
            watch = _state.watch
            if watch is not None:
                watch.ops[f"{_name} (a Python function per element)"] += 1
            return _original(self, *args, **kwargs)

        per_element._judge_wrapped = True
        setattr(torch.Tensor, name, per_element)


def _tensors(args, kwargs):
    import torch

    stack = list(args) if isinstance(args, (list, tuple)) else [args]
    stack += list(kwargs.values())
    for a in stack:
        if isinstance(a, torch.Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from _tensors(a, {})


def _storage_range(t):
    try:
        st = t.untyped_storage()
        return (st.data_ptr(), st.data_ptr() + st.nbytes()) if st.nbytes() else None
    except Exception:  # noqa: BLE001
        return None


def _in_kernel_buffers(watch, t) -> bool:
    rng = _storage_range(t)
    return rng is not None and any(a < rng[1] and rng[0] < b for a, b in watch.kernel_buffers)
