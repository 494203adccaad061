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
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from collections import Counter

from judge.shared.tracing import REPLAYED
from judge.untrusted import addresses, compile_lock, constants, own_ops, streams

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


class Watch:
    """The record of one entry-point call."""

    def __init__(self):
        self.own_launches: Counter = Counter()  # kernels defined in the submission
        self.other_launches: Counter = Counter()  # kernels defined anywhere else
        self.ops: Counter = Counter()  # disallowed torch operators, by name
        self.kernel_buffers: list[tuple[int, int]] = []  # storage ranges given to own kernels
        self.threads_before = threading.active_count()
        self.kernel_ids: set[int] = set()  # compiled kernels launched (see kernels())
        self.trace = None  # judge.untrusted.trace.Recorder: the call's launch sequence, for the replay check
        self.own_ops: Counter = Counter()  # the submission's own operators called (judge.untrusted.own_ops)


class _State:
    watch: Watch | None = None
    events: Counter = Counter()  # "thread", "process": started by the submission's own code
    depth = 0  # > 0 while a Triton launch (or autotuning) is on the stack
    submission = ""
    kernels: dict = {}  # id(compiled kernel) -> its resources, for kernels of the submission's file
    compile_seconds = 0.0  # time spent in launches that compiled (or loaded) a new kernel
    record_ok = False  # PyTorch's profiler shows this watch's dispatch mode (probed at install())
    quiet = 0  # > 0 while the recorder itself uses torch (its operators are not the submission's)
    benchmarking = 0  # > 0 while an autotuner times its configs (those launches are not the call's)
    namespace = ""  # the operator namespace the judge gave the submission (a factory problem), or ""
    interpret = False  # kernels run in Triton's interpreter (set by install())
    language_at_compile = False  # Triton's language is compared where a compiled kernel compiles (_wrap_compile)
    compiling = False  # the judge torch.compiles the entry point's calls (set by watch_file())


_state = _State()
_real: dict[str, str] = {}  # co_filename -> realpath (cached: frames are walked per operator)
_LIBRARY_DIRS: tuple[str, ...] = ()  # triton's and torch's packages, set by install()
_TRITON_DIRS: tuple[str, ...] = ()


def _where(filename: str) -> str:
    path = _real.get(filename)
    if path is None:
        path = _real[filename] = os.path.realpath(filename)
    return path


def _from_submission(skip: int = 2, stops: tuple[str, ...] | None = None) -> bool:
    """Whether the code that asked for this is the submission's own.

    Walks the stack outwards and stops at the first frame that belongs either
    to the submission's file (yes) or to Triton or PyTorch (no): the grid
    lambda, an autotune pre-hook, a heuristics function or (in the
    interpreter) a kernel body is the submission's code even inside a launch,
    while Triton copying arguments or PyTorch starting its own threads is not.
    For operators ``stops`` is Triton alone: PyTorch's dispatch frames sit
    between every operator and its caller.
    """
    stops = _LIBRARY_DIRS if stops is None else stops
    f = sys._getframe(skip)
    while f is not None:
        path = _where(f.f_code.co_filename)
        if path == _state.submission:
            return True
        if path.startswith(stops):
            return False
        f = f.f_back
    return False


def take_events() -> dict:
    """What the submission started (threads, processes) since the last call; then forgets it."""
    out = dict(_state.events)
    _state.events.clear()
    return out


def _flag_if_submission(kind: str) -> None:
    if _from_submission(3):
        _state.events[kind] += 1


def _watch_starts() -> None:
    """Wrap the primitives every thread and process start goes through."""
    import _thread

    def wrap(owner, attr, kind):
        original = getattr(owner, attr, None)
        if original is None or getattr(original, "_judge_wrapped", False):
            return

        def started(*args, **kwargs):
            _flag_if_submission(kind)
            return original(*args, **kwargs)

        started._judge_wrapped = True
        setattr(owner, attr, started)

    for attr in ("start_new_thread", "start_joinable_thread", "start_new"):
        wrap(_thread, attr, "thread")
    for attr in ("_start_new_thread", "_start_joinable_thread"):
        wrap(threading, attr, "thread")
    try:
        import _posixsubprocess
        import subprocess

        wrap(_posixsubprocess, "fork_exec", "process")
        wrap(subprocess, "_fork_exec", "process")
    except ImportError:  # pragma: no cover - not on Linux
        pass
    for attr in ("posix_spawn", "posix_spawnp", "system", "spawnv", "spawnve", "spawnvp", "spawnvpe"):
        wrap(os, attr, "process")
    if hasattr(os, "register_at_fork"):
        # os.fork, os.forkpty and multiprocessing's fork all run this in the parent.
        os.register_at_fork(before=lambda: _flag_if_submission("process"))


def _record_launch(kernel, args, kwargs):
    watch = _state.watch
    if watch is None:
        return
    fn = getattr(kernel, "fn", None)
    code = getattr(fn, "__code__", None)
    name = getattr(fn, "__name__", type(kernel).__name__)
    if code is not None and os.path.realpath(code.co_filename) == _state.submission:
        watch.own_launches[name] += 1
        for a in list(args) + list(kwargs.values()):
            if hasattr(a, "untyped_storage") and hasattr(a, "data_ptr"):
                try:
                    st = a.untyped_storage()
                    watch.kernel_buffers.append((st.data_ptr(), st.data_ptr() + st.nbytes()))
                except Exception:  # noqa: BLE001 - a non-tensor that looks like one
                    pass
    else:
        where = code.co_filename if code is not None else "?"
        watch.other_launches[f"{name} ({os.path.basename(where)})"] += 1


def _hold_constants(kernel):
    """The kernel's function when it is the file's own and held after the launch too, else None: its
    constants are compared now (judge.untrusted.constants; after a callable grid in _resolve_grid)."""
    if not _own(kernel):
        return None
    fn = kernel.fn
    if _state.language_at_compile:
        # On a GPU a kernel's body, its constants, helpers and Triton's language are read once, when it
        # compiles (_wrap_compile); a launch from the cache runs the compiled binary, which reads none of
        # them (and Triton refuses a changed global itself), so it pays only for what the launch calls on
        # its arguments (the tensor class: its data_ptr; a check at every launch of the rest cost 32 us of
        # 98's reference on the H200's host: tests/gpu/RESULTS.md, 2026-12-04).
        constants.check_launch(getattr(fn, "__name__", "?"), "at its launch")
        return None
    constants.check(fn, getattr(fn, "__name__", "?"), "at its launch")
    return fn


def _own(kernel) -> bool:
    code = getattr(getattr(kernel, "fn", None), "__code__", None)
    return code is not None and _where(code.co_filename) == _state.submission


# A kernel of the file's is given its arguments as plain values. Triton's interpreter converts a number
# inside the launch (NumPy calls its __int__) and a tensor-like object by its data_ptr(), after it has
# put its own functions into Triton's language: a subclass of int whose __int__ did the sum on the host
# with tl.load and tl.store and returned 0 as the kernel's n got AC (red team of 2026-12-04); so a number
# of a subclass, or an object that is a tensor by its methods alone, is refused (the launch goes on with
# the plain number it holds: int.__int__ runs none of its code).
_PLAIN = (int, float, bool, str, type(None))


def _plain(value, kernel_name: str):
    t = type(value)
    if t in _PLAIN:
        return value
    if t is tuple:
        return tuple(_plain(v, kernel_name) for v in value)
    if isinstance(value, (int, float)):
        import enum

        if not isinstance(value, enum.Enum):  # an IntEnum's member runs no code of its own
            constants._say(f"argument of {kernel_name}",
                           f"an argument of the kernel {kernel_name} (a number of class {t.__name__}, whose own "
                           f"code would run inside the launch: pass plain numbers)")
        return int.__int__(value) if isinstance(value, int) else float.__float__(value)
    import torch

    if t is torch.Tensor or t is torch.nn.Parameter:
        return value
    if isinstance(value, torch.Tensor) or hasattr(type(value), "data_ptr") or hasattr(value, "data_ptr"):
        if _state.compiling:  # torch.compile's own tensors (problem 99): its launches are its own
            return value
        constants._say(f"argument of {kernel_name}",
                       f"an argument of the kernel {kernel_name} (an object of class {t.__name__}, whose own code "
                       f"would run inside the launch: pass tensors and plain numbers)")
        return value
    constexpr = _constexpr_class()
    if constexpr is not None and t is constexpr:
        inner = getattr(value, "value", None)
        plain = _plain(inner, kernel_name)
        return value if plain is inner else constexpr(plain)
    return value


_constexpr_type = None


def _constexpr_class():
    global _constexpr_type
    if _constexpr_type is None:
        try:
            from triton.language import constexpr
        except ImportError:  # pragma: no cover
            constexpr = False
        _constexpr_type = constexpr
    return _constexpr_type or None


_LAUNCH_OPTIONS = frozenset({"grid", "warmup"})


def _plain_arguments(kernel, args, kwargs):
    if not _own(kernel):
        return args, kwargs
    name = getattr(getattr(kernel, "fn", None), "__name__", "?")
    args = tuple(_plain(a, name) for a in args)
    kwargs = {k: (v if k in _LAUNCH_OPTIONS else _plain(v, name)) for k, v in kwargs.items()}
    return args, kwargs


# A callable grid is the file's code; Triton calls it inside the launch with the dictionary of the
# arguments it then launches with (the interpreter, after putting its own functions into the language;
# a GPU, after the compile). A grid that set meta["n"] = 0 there, and did the sum on the host with the
# interpreter's tl.load and tl.store, got AC (red team of 2026-12-04): the launch record and the replay
# kept the true n. So the worker calls the grid itself, before the launch, with a copy of the arguments
# (as Triton names them, with the kernel's defaults), and launches with the grid it returned.
_signatures: dict = {}


def _resolve_grid(kernel, args, kwargs):
    grid = kwargs.get("grid")
    if not callable(grid) or not _own(kernel):
        return kwargs
    fn = kernel.fn
    defaults = _signatures.get(fn)
    if defaults is None:
        import inspect

        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            params = {}
        defaults = _signatures[fn] = {n: p.default for n, p in params.items()
                                      if p.default is not inspect.Parameter.empty}
    names = list(getattr(kernel, "arg_names", None) or ())
    meta = dict(defaults)
    meta.update(zip(names, args))
    meta.update((k, v) for k, v in kwargs.items() if k not in _LAUNCH_OPTIONS)
    given = dict(meta)
    resolved = grid(meta)
    if len(meta) != len(given) or any(meta.get(k, given) is not v for k, v in given.items()):
        constants._say(f"grid of {fn.__name__}", f"the arguments of the kernel {fn.__name__} (its grid changed the "
                                                f"dictionary it was given: a grid only computes the launch's size)")
    if not _state.language_at_compile:
        constants.check(fn, fn.__name__, "after its grid was computed")
    if isinstance(resolved, list):
        resolved = tuple(resolved)
    return dict(kwargs, grid=resolved)


def _trace_launch(kernel, args, kwargs):
    """The launch's record for the replay check, and the keyword arguments to launch with.

    A callable grid is wrapped so that the grid Triton computes from the bound
    arguments is recorded, without calling the submission's grid a second time.
    """
    watch = _state.watch
    trace = watch.trace if watch is not None else None
    if trace is None or _state.benchmarking:
        return None, kwargs
    fn = getattr(kernel, "fn", None)
    code = getattr(fn, "__code__", None)
    name = getattr(fn, "__name__", type(kernel).__name__)
    _state.quiet += 1
    try:
        if code is None or os.path.realpath(code.co_filename) != _state.submission:
            trace.foreign(f"{name} ({os.path.basename(code.co_filename) if code is not None else '?'})")
            return None, kwargs
        grid = kwargs.get("grid")
        event = trace.launch(name, args, kwargs, grid)
    finally:
        _state.quiet -= 1
    if event is not None and callable(grid):
        def recorded_grid(meta, _grid=grid, _event=event):
            resolved = _grid(meta)
            _event["grid"] = trace.grid(resolved)
            return resolved

        kwargs = dict(kwargs, grid=recorded_grid)
    return event, kwargs


def _traced_op(trace, func, args, kwargs):
    """Run an operator the replay redoes, and record it (its arguments as they were before it ran)."""
    event = trace.op_before(func, args, kwargs)
    result = func(*args, **kwargs)
    trace.op_after(event, func, result)
    return result


_tuned: "weakref.WeakSet" = None  # the autotuners that timed their configs in this worker (forget_tuning)


def forget_tuning() -> int:
    """Make every autotuner that has timed its configs here time them again at its next call: its choices were
    made beside other work (a speed run's warm-up ahead of the GPU's lock). Its compiled kernels stay.
    Returns how many autotuners forgot."""
    tuners = list(_tuned or ())
    for tuner in tuners:
        cache = getattr(tuner, "cache", None)
        if isinstance(cache, dict):
            cache.clear()
    return len(tuners)


def _wrap_bench(autotuner_cls) -> None:
    """An autotuner's timing runs are not part of the call: they are not recorded for the replay."""
    global _tuned
    import weakref

    original = getattr(autotuner_cls, "_bench", None)
    if original is None or getattr(original, "_judge_wrapped", False):
        return
    _tuned = weakref.WeakSet()

    def _bench(self, *args, **kwargs):
        try:
            _tuned.add(self)
        except TypeError:  # not weak-referenceable: it is then not asked to tune again
            pass
        _state.benchmarking += 1
        try:
            return original(self, *args, **kwargs)
        finally:
            _state.benchmarking -= 1

    _bench._judge_wrapped = True
    autotuner_cls._bench = _bench


def _wrap_compile(jit_cls) -> bool:
    """Compare a kernel's constants, helpers and Triton's language as the compiler reads them (a GPU's
    JITFunction._do_compile: a launch or a warm-up that finds no compiled kernel in the cache), before and
    after it compiles. Returns False where this Triton has no such method: every launch is then held as in
    the interpreter."""
    original = getattr(jit_cls, "_do_compile", None)
    if original is None:
        return False
    if getattr(original, "_judge_wrapped", False):
        return True

    def _do_compile(self, *args, **kwargs):
        if not _own(self):
            return original(self, *args, **kwargs)
        fn = self.fn
        name = getattr(fn, "__name__", "?")
        constants.check(fn, name, "as it was compiled")
        try:
            with compile_lock.held(self, args, kwargs):  # the submission's other workers compile it once
                kernel = original(self, *args, **kwargs)
        finally:  # the compiler may call code of the file's (a constexpr function): held after it too
            constants.check(fn, name, "after it was compiled")
        try:
            # Before it runs: a kernel that reads or makes an address is refused (judge.untrusted.addresses), and
            # not left in the cache for the next launch.
            addresses.check_compiled(name, kernel, _state.submission)
        except addresses.AddressRefused:
            try:
                self.device_caches[args[2] if len(args) > 2 else kwargs.get("device")][0].pop(args[0], None)
            except Exception:  # noqa: BLE001 - another Triton's cache: the replay refuses it as well
                pass
            raise
        return kernel

    _do_compile._judge_wrapped = True
    jit_cls._do_compile = _do_compile
    return True


def _wrap_launcher(cls, count: bool):
    original = cls.run
    if getattr(original, "_judge_wrapped", False):
        return

    def run(self, *args, **kwargs):
        event = None
        own = None
        if count and not kwargs.get("warmup", False):
            if not _state.benchmarking:  # (an autotuner's timing runs are its own, on whatever stream it times)
                streams.at_launch(getattr(getattr(self, "fn", None), "__name__", "?"))
            args, kwargs = _plain_arguments(self, args, kwargs)
            _record_launch(self, args, kwargs)
            own = _hold_constants(self)
            kwargs = _resolve_grid(self, args, kwargs)
            event, kwargs = _trace_launch(self, args, kwargs)
        _state.depth += 1
        try:
            if not count:
                return original(self, *args, **kwargs)
            before = len(_state.kernels)
            start = time.perf_counter()
            kernel = original(self, *args, **kwargs)
            if own is not None:
                # (in the interpreter Triton's language and what the launch calls too: an object's method
                # set inside the launch and removed after it is seen here)
                constants.check(own, own.__name__, "after the launch", language=_state.interpret)
            if event is not None and _state.watch is not None and _state.watch.trace is not None:
                _state.quiet += 1  # the digests of what it was given are the judge's work, not the call's
                try:
                    _state.watch.trace.written(event)
                finally:
                    _state.quiet -= 1
                _state.watch.trace.launched(event)
            if id(kernel) not in _state.kernels and kernel is not None:
                _record_kernel(self, kernel)
                if len(_state.kernels) > before:
                    _state.compile_seconds += time.perf_counter() - start
            if _state.watch is not None and kernel is not None:
                _state.watch.kernel_ids.add(id(kernel))
            return kernel
        except Exception as exc:
            if count and type(exc).__name__ == "CompilationError":
                exc._judge_def_line = _def_line(self)
            raise
        finally:
            _state.depth -= 1

    run._judge_wrapped = True
    cls.run = run


def _record_kernel(jit_fn, kernel) -> None:
    """Registers, spills and shared memory of a newly compiled kernel (a new constexpr combination).

    Triton's CompiledKernel has ``n_regs`` and ``n_spills`` once it is loaded
    (it is, after a launch) and ``metadata.shared``; the interpreter returns
    no compiled kernel, so nothing is recorded there.
    """
    meta = getattr(kernel, "metadata", None)
    if meta is None:
        return
    fn = getattr(jit_fn, "fn", None)
    code = getattr(fn, "__code__", None)
    own = code is not None and os.path.realpath(code.co_filename) == _state.submission
    _state.kernels[id(kernel)] = {
        "name": getattr(fn, "__name__", getattr(kernel, "name", "?")),
        "own": own,
        "registers": getattr(kernel, "n_regs", None),
        "spills": getattr(kernel, "n_spills", None),
        "shared_bytes": getattr(meta, "shared", None),
        "num_warps": getattr(meta, "num_warps", None),
        "num_stages": getattr(meta, "num_stages", None),
        "kernel": kernel,  # kept alive so its id stays unique; dropped by kernels()
    }


def kernels(ids=None) -> list[dict]:
    """Compiled kernels seen so far (only those in ``ids`` if given), as plain data."""
    out = []
    for key, info in _state.kernels.items():
        if ids is None or key in ids:
            out.append({k: v for k, v in info.items() if k != "kernel"})
    return out


def compile_stats() -> dict:
    return {"compiled": len(_state.kernels), "compile_seconds": round(_state.compile_seconds, 4)}


def _def_line(kernel) -> int | None:
    """The file line of a kernel's ``def``: compile errors count lines from there."""
    raw = getattr(kernel, "raw_src", None)
    start = getattr(kernel, "starting_line_number", None)
    if not raw or start is None:
        return None
    text = "".join(raw)
    m = re.search(r"^\s*def\s+\w+\s*\(", text, re.M)
    return start + text[: m.start()].count("\n") if m else None


def _first_config_only(autotuner_cls) -> None:
    """In the interpreter, autotune with the first config that survives pruning.

    Benchmarking configs needs a GPU (Triton fails with "0 active drivers"),
    and timing the interpreter would mean nothing; every config is still
    exercised on a GPU.
    """
    original = getattr(autotuner_cls, "prune_configs", None)
    if original is None or getattr(original, "_judge_wrapped", False):
        return

    def prune_configs(self, *args, **kwargs):
        return list(original(self, *args, **kwargs))[:1]

    prune_configs._judge_wrapped = True
    autotuner_cls.prune_configs = prune_configs


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
_QUIET_OPS = frozenset({"detach_", "is_pinned", "set_", "resize_", "record_stream",
                        "_has_compatible_shallow_copy_type"})


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
        if e.name.startswith("aten::") and (base in ALLOWED_OPS or base in _QUIET_OPS):
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
    global _LIBRARY_DIRS, _TRITON_DIRS
    _state.interpret = interpret
    import torch
    import triton
    from triton.runtime import jit

    _LIBRARY_DIRS = tuple(os.path.realpath(os.path.dirname(m.__file__)) + os.sep for m in (triton, torch))
    _TRITON_DIRS = _LIBRARY_DIRS[:1]
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
            # traces into it; the wrapper imports Dynamo at the mode's first operator, 1.5 s of every
            # worker's start on 2 cores. Where nothing has imported Dynamo (read as this class is made, once
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
            replayed = (trace is not None and not _state.benchmarking
                        and func.overloadpacket.__name__ in REPLAYED and getattr(func, "namespace", None) == "aten")
            if _state.depth > 0:
                # Inside a launch Triton itself copies and converts arguments;
                # the submission's own callbacks (grid, hooks, heuristics, an
                # interpreted kernel body) are still watched, and what they
                # allocate or copy is recorded for the replay.
                allowed = _op_is_allowed(func, args, kwargs)
                if not allowed and _from_submission(2, _TRITON_DIRS):
                    watch.ops[_op_name(func)] += 1
                elif allowed and replayed and _from_submission(2, _TRITON_DIRS):
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
