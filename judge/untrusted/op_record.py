"""PyTorch's operator record around a judged call, as a second witness for the operator watch
(judge.untrusted.operators, judge.untrusted.guard): what ran out of the watch's sight is found in the
profiler's events afterwards (see the comment below for what counts).
"""

from __future__ import annotations

import os
import re
from collections import Counter

from judge.untrusted import operators, own_ops
from judge.untrusted.watch_state import Watch, _state


def _mark_printing() -> None:
    """Printing a tensor (``repr``, ``print``) switches Python dispatch off inside PyTorch itself: its operators
    are marked in the record with a range of a secret name, so that a debugging print is not taken for a cheat."""
    import torch
    import torch._tensor_str as tensor_str

    original = tensor_str._str
    fast = getattr(getattr(torch._C, "_profiler", None), "_RecordFunctionFast", None)
    if fast is None or getattr(original, "_judge_wrapped", False):
        return

    def _str(self, *args, **kwargs):
        if _state.watch is None:
            return original(self, *args, **kwargs)
        with fast(_PRINTING):
            return original(self, *args, **kwargs)

    _str._judge_wrapped = True
    tensor_str._str = _str


# --------------------------------------------------------------------------- the operator record
#
# The operator watch is a TorchDispatchMode: code that switches Python dispatch
# off (PyTorch's dispatch guard under any of its names, a key excluded, the mode
# popped) runs operators it never sees. PyTorch's profiler records every
# operator in C++, below Python dispatch, and an event "PythonDispatchMode"
# wherever the Python key handled one. During a judged call (watching(verify=True))
# the worker runs the profiler (CPU events only, about a millisecond) and
# afterwards finds, as evidence:
#   * operators that ran with no Python dispatch around them (neither inside nor
#     above a PythonDispatchMode event): computed out of the watch's sight;
#   * more operators handled by Python dispatch than the watch saw: another
#     dispatch handler took them;
#   * a sentinel operator at the end of the call that the watch did not see:
#     the watch was left switched off;
#   * a record that was stopped or replaced during the call.
# Allocation, views and copies are not counted; nor is an operator every overload
# of which is CompositeImplicitAutograd (it computes only through the operators
# it dispatches, which are judged themselves).

_OP_EVENT = re.compile(r"^\w+::\w+$")
_MODE_EVENT = "PythonDispatchMode"
_PRINTING = f"judge::printing::{os.urandom(8).hex()}"  # the range around tensor printing (_mark_printing)
_composite: dict[str, bool] = {}
# Operators PyTorch's own code runs with Python dispatch off (torch.tensor([...]) detaches its result
# inside C++; a copy to the GPU asks whether memory is pinned): they compute nothing.
_QUIET_OPS = frozenset(
    {"detach_", "is_pinned", "set_", "resize_", "record_stream", "_has_compatible_shallow_copy_type"}
)


def _all_composite(name: str) -> bool:
    got = _composite.get(name)
    if got is None:
        got = False
        try:
            import torch

            namespace, op = name.split("::")
            flags = []
            for overload in getattr(getattr(torch.ops, namespace), op).overloads():
                qualified = name if overload == "default" else f"{name}.{overload}"
                try:
                    flags.append(torch._C._dispatch_has_kernel_for_dispatch_key(qualified, "CompositeImplicitAutograd"))
                except RuntimeError:  # an overload only TorchScript knows
                    pass
            got = bool(flags) and all(flags)
        except Exception:  # noqa: BLE001 - an unknown namespace: not composite
            got = False
        _composite[name] = got
    return got


class _Event:
    """One CPU event of the profiler, with its place in the call tree of its thread."""

    __slots__ = ("name", "start", "end", "op", "parent", "children")

    def __init__(self, name: str, start: int, end: int, op: bool):
        self.name, self.start, self.end, self.op = name, start, end, op
        self.parent = None
        self.children = []


def _events(raw) -> list:
    """The profiler's raw events (kineto's, not the heavy FunctionEvent objects) as call trees, nested by time."""
    threads: dict = {}
    for e in raw:
        # Only operators and PyTorch's own ranges (scope 0): a user's record_function can be named anything.
        op = e.scope() == 0 and not e.is_user_annotation()
        threads.setdefault(e.start_thread_id(), []).append(_Event(e.name(), e.start_ns(), e.end_ns(), op))
    out = []
    for events in threads.values():
        events.sort(key=lambda n: (n.start, -n.end))
        stack: list = []
        for n in events:
            while stack and stack[-1].end < n.end:
                stack.pop()
            if stack:
                n.parent = stack[-1]
                stack[-1].children.append(n)
            stack.append(n)
        out += events
    return out


def _is_mode_event(e) -> bool:
    return e is not None and e.op and e.name == _MODE_EVENT


def _covered(e) -> bool:
    """Python dispatch handled this operator: a PythonDispatchMode event above or below it (or it ran inside
    tensor printing, which switches Python dispatch off itself)."""
    p = e.parent
    while p is not None:
        if _is_mode_event(p) or p.name == _PRINTING:
            return True
        p = p.parent
    stack = list(e.children)
    while stack:
        c = stack.pop()
        if _is_mode_event(c):
            return True
        stack.extend(c.children)
    return False


def _expanded(e) -> bool:
    """One of the submission's own operators as the watch redispatched it (judge.untrusted.own_ops): under
    AOTAutograd's runtime PyTorch records the redispatched call, and Python dispatch below it, once more."""
    ns = own_ops._state.namespace
    return bool(ns) and e.name.startswith(f"{ns}::") and _is_mode_event(e.parent)


def _analyse(events, seen: int) -> Counter:
    """Findings (as operator names) from the profiler's events of one call; ``seen``: operators the watch saw."""
    found: Counter = Counter()
    ops = [e for e in events if e.op]
    if not any(_is_mode_event(e) for e in ops):
        return found  # not even the start sentinel shows: this build does not record Python dispatch
    handled = 0
    last = None
    for e in ops:
        if _is_mode_event(e):
            if e.parent is not None and e.parent.op and e.parent.name != _MODE_EVENT and not _expanded(e.parent):
                handled += 1
            continue
        if not _OP_EVENT.match(e.name):
            continue
        if e.parent is None and (last is None or e.start >= last.start):
            last = e  # the last operator called at the top (the sentinel, when the watch is on)
        base = e.name.split("::", 1)[1]
        if e.name.startswith("aten::") and (base in operators.ALLOWED_OPS or base in _QUIET_OPS):
            continue
        if not _covered(e) and not _all_composite(e.name):
            found[f"{base if e.name.startswith('aten::') else e.name} (run with the operator watch switched off)"] += 1
    if handled > seen:
        found[f"operators ({handled - seen}) taken by a dispatch handler other than the judge's"] += 1
    if last is None or last.name != "aten::empty" or not _covered(last):
        found["operators after the operator watch was switched off (it was still off when the call returned)"] += 1
    return found


class _Record:
    """PyTorch's profiler around one watched call (see above)."""

    def __init__(self):
        self.prof = None
        self.failed = ""

    def start(self) -> None:
        try:
            import torch.autograd.profiler as profiler

            self.prof = profiler.profile()
            self.prof.__enter__()
        except Exception as exc:  # noqa: BLE001 - e.g. a profiler left running by the submission
            self.prof = None
            self.failed = f"it could not start: {type(exc).__name__}"

    @staticmethod
    def sentinel() -> None:
        import torch

        # Quiet: the watch counts it as seen (that is the point) but the replay's record leaves it out.
        _state.quiet += 1
        try:
            torch.empty((0,))
        finally:
            _state.quiet -= 1

    def finish(self, watch: Watch, seen: int) -> None:
        if self.prof is None:
            watch.ops[f"PyTorch's operator record ({self.failed})"] += 1
            return
        try:
            self.prof.__exit__(None, None, None)
            events = _events(self.prof.kineto_results.events())
        except Exception as exc:  # noqa: BLE001 - stopped by the submission
            watch.ops[f"PyTorch's operator record (stopped during the call: {type(exc).__name__})"] += 1
            return
        watch.ops.update(_analyse(events, seen))
