"""What the worker records about one call of the submission's entry point.

Two things decide whether a Triton kernel did the work, and both are recorded
here as plain data for the judge to rule on:

* every launch of a ``@triton.jit`` kernel (on the GPU and in the interpreter),
  with where the kernel was defined and which buffers it was given;
* every PyTorch operator the call dispatches *outside* a Triton launch, so
  that ``torch.softmax(x)`` or ``a @ b`` shows up by name. Allocation, views,
  metadata and same-device copies are allowed: a wrapper needs those to set up
  a kernel, and none of them computes an answer.

The worker is in the submission's process, so none of this is tamper-proof on
its own; the judge treats it as evidence, and the values are still checked.
With ``watching(inputs=..., device=...)`` the call's launch sequence is recorded too
(judge.untrusted.trace), for the judge to replay alone on fresh inputs in a
process the submission never ran in (judge.replay): that check believes none
of this.

The watch is in parts, each with its own module: the launches (judge.untrusted.launches), the operator
rules (judge.untrusted.operators), PyTorch's operator record (judge.untrusted.op_record), the threads and
processes started (judge.untrusted.spawns), and the state they share (judge.untrusted.watch_state). This
module installs them and holds the context managers a call is watched with.
"""

from __future__ import annotations

import os
import sys

from judge.shared.tracing import REPLAYED
from judge.untrusted import own_ops, streams, watch_state
from judge.untrusted.launches import _first_config_only, _wrap_bench, _wrap_compile, _wrap_launcher
from judge.untrusted.op_record import _events, _is_mode_event, _mark_printing, _Record
from judge.untrusted.operators import (
    _in_kernel_buffers,
    _op_is_allowed,
    _op_name,
    _storage_range,
    _tensors,
    _traced_op,
    _watch_callbacks,
    _watch_redispatch,
)
from judge.untrusted.spawns import _watch_starts
from judge.untrusted.watch_state import Watch, _from_submission, _state


def _probe() -> bool:
    """Whether the profiler shows this watch's dispatch mode here (before the submission is imported)."""
    import torch

    try:
        w = watching(verify=False)
        record = _Record()
        record.start()
        if record.prof is None:
            return False
        with w:
            torch.empty((0,))
        record.prof.__exit__(None, None, None)
        return any(_is_mode_event(e) for e in _events(record.prof.kineto_results.events()))
    except Exception:  # noqa: BLE001
        return False


def watch_file(submission_path: str, namespace: str = "", compiling: bool = False) -> None:
    """The submission's file, whose code the watch attributes launches, operators and threads to: named once
    the worker is given its submission (a pooled worker installs the watch before it knows which).

    ``namespace``: the operator namespace a factory problem gives the submission (judge.untrusted.own_ops);
    ``compiling``: the judge will torch.compile calls of the entry point (in the interpreter, launches on
    fake tensors are then skipped)."""
    _state.submission = os.path.realpath(submission_path) if submission_path else ""
    _state.namespace = namespace
    _state.compiling = compiling
    streams.target(_state.submission)
    own_ops.target(namespace, _state.submission)
    if namespace:
        own_ops.watch_libraries()
    if compiling and _state.interpret:
        try:
            from triton.runtime.interpreter import InterpretedFunction

            own_ops.skip_fake_launches(InterpretedFunction)
        except ImportError:  # pragma: no cover - every supported Triton has it
            pass


def install(submission_path: str, interpret: bool = False, namespace: str = "", compiling: bool = False) -> None:
    """Patch Triton's launchers; call after importing triton, before the submission (a pooled worker: before
    it is given one, with no file; watch_file names it then)."""
    _state.interpret = interpret
    import torch
    import triton
    from triton.runtime import jit

    watch_state._LIBRARY_DIRS = tuple(os.path.realpath(os.path.dirname(m.__file__)) + os.sep for m in (triton, torch))
    watch_state._TRITON_DIRS = watch_state._LIBRARY_DIRS[:1]
    _watch_starts()

    _wrap_launcher(jit.JITFunction, count=True)
    _state.language_at_compile = not interpret and _wrap_compile(jit.JITFunction)
    try:
        from triton.runtime.interpreter import InterpretedFunction

        _wrap_launcher(InterpretedFunction, count=True)
    except ImportError:  # pragma: no cover - every supported Triton has it
        pass
    try:
        from triton.runtime.autotuner import Autotuner, Heuristics

        # These only forward to JITFunction.run (which counts); wrapping them
        # keeps the benchmarking they do between launches out of the op watch.
        _wrap_launcher(Autotuner, count=False)
        _wrap_launcher(Heuristics, count=False)
        _wrap_bench(Autotuner)
        if interpret:
            _first_config_only(Autotuner)
    except ImportError:  # pragma: no cover
        pass
    _watch_redispatch()
    _watch_callbacks()
    _mark_printing()
    streams.watch_captures()
    os.environ["KINETO_LOG_LEVEL"] = "9"  # the profiler prints a line at every start and stop below this
    _state.record_ok = _probe()
    watch_file(submission_path, namespace, compiling)


def counting():
    """Context manager: count launches only (no operator watch), cheap enough to sit inside timed calls."""

    class _Ctx:
        def __enter__(self):
            self.watch = Watch()
            _state.watch = self.watch
            _state.depth = 0
            streams.begin()
            return self.watch

        def __exit__(self, *exc):
            _state.watch = None
            streams.end()
            return False

    return _Ctx()


def watching(verify: bool = False, inputs=None, device: str = "cpu"):
    """Context manager: record launches and torch operators during one call.

    ``verify``: also run PyTorch's operator record around the call (see _Record), for the judged calls;
    the speed run's watched calls leave it off. With ``inputs`` ((argument index, storage tensor) of
    each tensor argument), the call's launch sequence is recorded too (``watch.trace``), for the
    judge's replay check.
    """
    from torch.utils._python_dispatch import TorchDispatchMode

    from judge.untrusted.trace import Recorder

    class _OpWatch(TorchDispatchMode):
        seen = 0  # operators this mode was handed

        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            # PyTorch wraps a mode's __torch_dispatch__ in Dynamo's "disable", so that compiled code never
            # traces into it; the wrapper imports Dynamo at the mode's first operator, a second
            # and more of every worker's start. Where nothing has imported Dynamo (read as this class is made, once
            # per watched call) nothing is compiling: no wrapper. Where the judge compiles the call
            # (judge.untrusted.compiled), the wrapper.
            return _state.compiling or "torch._dynamo" in sys.modules

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.seen += 1
            kwargs = kwargs or {}
            watch = _state.watch
            if own_ops.is_own(func):
                # The submission's own operator: counted, and its kernel run with this mode on again.
                if watch is not None and not _state.quiet:
                    watch.own_ops[own_ops.name_of(func)] += 1
                return own_ops.expand(self, func, args, kwargs)
            if watch is None or _state.quiet:
                return func(*args, **kwargs)
            if streams._state.on and not _state.benchmarking:
                streams.at_op(_op_name(func))
            trace = watch.trace
            replayed = (
                trace is not None
                and not _state.benchmarking
                and func.overloadpacket.__name__ in REPLAYED
                and getattr(func, "namespace", None) == "aten"
            )
            if _state.depth > 0:
                # Inside a launch Triton itself copies and converts arguments;
                # the submission's own callbacks (grid, hooks, heuristics, an
                # interpreted kernel body) are still watched, and what they
                # allocate or copy is recorded for the replay.
                allowed = _op_is_allowed(func, args, kwargs)
                if not allowed and _from_submission(2, watch_state._TRITON_DIRS):
                    watch.ops[_op_name(func)] += 1
                elif allowed and replayed and _from_submission(2, watch_state._TRITON_DIRS):
                    return _traced_op(trace, func, args, kwargs)
                return func(*args, **kwargs)
            if not _op_is_allowed(func, args, kwargs):
                watch.ops[_op_name(func)] += 1
                return func(*args, **kwargs)
            result = _traced_op(trace, func, args, kwargs) if replayed else func(*args, **kwargs)
            # A copy, cast or view of a buffer a kernel was given counts as that
            # kernel's output (e.g. an fp32 accumulator cast to fp16 with .to()).
            if any(_in_kernel_buffers(watch, t) for t in _tensors(args, kwargs)):
                for t in _tensors(result, {}):
                    rng = _storage_range(t)
                    if rng is not None:
                        watch.kernel_buffers.append(rng)
            return result

    class _Ctx:
        def __enter__(self):
            self.watch = Watch()
            if inputs is not None:
                self.watch.trace = Recorder(inputs, device)
            _state.watch = self.watch
            _state.depth = 0
            _state.quiet = 0
            _state.benchmarking = 0
            self.record = _Record() if verify and _state.record_ok else None
            if self.record is not None:
                self.record.start()
            streams.begin()
            self.mode = _OpWatch()
            self.mode.__enter__()
            if self.record is not None:
                self.record.sentinel()
            return self.watch

        def __exit__(self, *exc):
            try:
                if self.record is not None:
                    self.record.sentinel()
                self.mode.__exit__(*exc)
            finally:
                _state.watch = None
                streams.end()
                if self.record is not None:
                    self.record.finish(self.watch, self.mode.seen)
            return False

    return _Ctx()
