"""The watch on Triton's launches: every launch of a ``@triton.jit`` kernel recorded, with where the kernel
was defined and which buffers it was given; the file's kernels given plain arguments and a grid the worker
computed itself; the launch's record for the replay check (judge.untrusted.trace); the file's constants held
where a kernel runs or compiles (judge.untrusted.constants); and each compiled kernel's resources.
judge.untrusted.guard installs the wrappers.
"""

from __future__ import annotations

import os
import re
import time

from judge.untrusted import addresses, compile_lock, constants, streams
from judge.untrusted.watch_state import _state, _where


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
        # its arguments (the tensor class: its data_ptr; a check at every launch of the rest costs tens of
        # microseconds a launch: docs/measurements, worker starts).
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
# with tl.load and tl.store and returned 0 as the kernel's n got AC (a red-team file); so a number
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
            constants._say(
                f"argument of {kernel_name}",
                f"an argument of the kernel {kernel_name} (a number of class {t.__name__}, whose own "
                f"code would run inside the launch: pass plain numbers)",
            )
        return int.__int__(value) if isinstance(value, int) else float.__float__(value)
    import torch

    if t is torch.Tensor or t is torch.nn.Parameter:
        return value
    if isinstance(value, torch.Tensor) or hasattr(type(value), "data_ptr") or hasattr(value, "data_ptr"):
        if _state.compiling:  # torch.compile's own tensors (problem 99): its launches are its own
            return value
        constants._say(
            f"argument of {kernel_name}",
            f"an argument of the kernel {kernel_name} (an object of class {t.__name__}, whose own code "
            f"would run inside the launch: pass tensors and plain numbers)",
        )
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
# interpreter's tl.load and tl.store, got AC (a red-team file): the launch record and the replay
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
        defaults = _signatures[fn] = {
            n: p.default for n, p in params.items() if p.default is not inspect.Parameter.empty
        }
    names = list(getattr(kernel, "arg_names", None) or ())
    meta = dict(defaults)
    meta.update(zip(names, args))
    meta.update((k, v) for k, v in kwargs.items() if k not in _LAUNCH_OPTIONS)
    given = dict(meta)
    resolved = grid(meta)
    if len(meta) != len(given) or any(meta.get(k, given) is not v for k, v in given.items()):
        constants._say(
            f"grid of {fn.__name__}",
            f"the arguments of the kernel {fn.__name__} (its grid changed the "
            f"dictionary it was given: a grid only computes the launch's size)",
        )
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


_tuned: weakref.WeakSet = None  # the autotuners that timed their configs in this worker (forget_tuning)  # noqa: F821


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
