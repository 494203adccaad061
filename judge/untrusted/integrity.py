"""What must not change while a submission runs: global settings and the tools.

Before the submission is imported the worker takes a snapshot of the settings
that change numerics (TF32, matmul precision, the NaN fill of fresh memory)
and of the identity of every function the judge's evidence depends on (the
clock, CUDA events and sync, Triton's launchers as the worker wrapped them,
the worker's own channel and recording code). After the import and after
every call it compares: a difference is reported by name, and the judge
rejects the submission. A determined cheat could restore things in time; the
static scan and the sandbox are the other layers.

The worker's own objects are compared too (``snapshot(objects=...)``): a
method set on an instance (``worker.reply = fake``) shadows its class's, which
the class-level identities would never show. For each object, every attribute
in its own ``vars()`` that is callable or a module is recorded by identity and
every int, str or bytes by value; after the import and every call a changed
one, or a new callable one, is reported as ``label.attribute``.
"""

from __future__ import annotations

import functools
import importlib

SETTINGS = {
    "torch.backends.cuda.matmul.allow_tf32": lambda t: t.backends.cuda.matmul.allow_tf32,
    "torch.backends.cudnn.allow_tf32": lambda t: t.backends.cudnn.allow_tf32,
    "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction": lambda t: (
        t.backends.cuda.matmul.allow_fp16_reduced_precision_reduction
    ),
    "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction": lambda t: (
        t.backends.cuda.matmul.allow_bf16_reduced_precision_reduction
    ),
    "torch.get_float32_matmul_precision()": lambda t: t.get_float32_matmul_precision(),
    "torch.are_deterministic_algorithms_enabled()": lambda t: t.are_deterministic_algorithms_enabled(),
    "torch.utils.deterministic.fill_uninitialized_memory": lambda t: t.utils.deterministic.fill_uninitialized_memory,
    "torch.set_printoptions()": lambda t: sorted(vars(t._tensor_str.PRINT_OPTS).items()),
    # 1.0 (the default) until CUDA starts: reading it must not start CUDA in a worker that does not use it.
    "torch.cuda.get_per_process_memory_fraction()": lambda t: (
        t.cuda.get_per_process_memory_fraction() if t.cuda.is_initialized() else 1.0
    ),
}

IDENTITIES = [
    "time.perf_counter",
    "time.perf_counter_ns",
    "time.time",
    "time.monotonic",
    "time.monotonic_ns",
    "torch.cuda.synchronize",
    "torch.cuda.Event",
    "torch.cuda.Event.record",
    "torch.cuda.Event.elapsed_time",
    "torch.cuda.Event.synchronize",
    "torch.cuda.Event.query",
    "torch.cuda._sleep",
    "torch.cuda.Stream",
    "torch.empty",
    "torch.empty_like",
    "torch.zeros",
    "torch.Tensor.copy_",
    "torch.Tensor.to",
    "torch.Tensor.cpu",
    "torch.Tensor.contiguous",
    "torch.as_strided",
    "torch.frombuffer",
    "torch.utils._python_dispatch.TorchDispatchMode.__enter__",
    "torch.utils._python_dispatch.TorchDispatchMode.__exit__",
    "triton.runtime.jit.JITFunction.run",
    "triton.runtime.jit.KernelInterface.__getitem__",
    "triton.runtime.interpreter.InterpretedFunction.run",
    "triton.runtime.autotuner.Autotuner.run",
    "triton.runtime.autotuner.Autotuner.prune_configs",
    "triton.runtime.autotuner.Heuristics.run",
    "triton.testing.do_bench",
    # What rewired() rebuilds a kernel with, to hold it against what the interpreter made of it.
    "triton.runtime.interpreter.FunctionRewriter.rewrite_ast",
    "triton.runtime.interpreter.FunctionRewriter._find_def",
    "triton.runtime.interpreter.FunctionRewriter._prepare_source",
    # What the interpreter's rewrite of a kernel calls back through (judge.untrusted.constants holds a kernel's
    # globals to these objects; replaced in the interpreter's module, they would be copied in instead).
    "triton.runtime.interpreter.interpreter_semantic",
    "triton.runtime.interpreter._InterpreterComparison",
    "triton.runtime.interpreter.interpreter_builder",
    "triton.runtime.interpreter.FunctionRewriter._transform_ast",
    "inspect.getblock",
    "inspect.getsourcelines",
    "threading.enumerate",
    "threading.active_count",
    "json.dumps",
    "json.loads",
    "hashlib.sha256",
    "os.write",
    "os.read",
    "os.dup",
    "judge.shared.wire.send",
    "judge.shared.wire.write_frame",
    "judge.shared.wire.Reader.recv",
    "judge.shared.wire.tensor_to_wire",
    "judge.shared.wire.storage_to_wire",
    "judge.shared.wire.tensor_from_wire",
    "judge.untrusted.launches._record_launch",
    "judge.untrusted.operators._op_is_allowed",
    "judge.untrusted.guard.watching",
    "judge.untrusted.operators._in_kernel_buffers",
    "judge.untrusted.runner.Worker.reply",
    "judge.untrusted.runner.Worker.run_case",
    "judge.untrusted.runner.Worker.call",
    "judge.untrusted.outputs.describe_outputs",
    "judge.untrusted.outputs.kind_of",
    "judge.untrusted.errors.classify",
    "judge.untrusted.integrity.snapshot",
    "judge.untrusted.integrity.changed",
    "judge.untrusted.guard.counting",
    "judge.untrusted.launches.kernels",
    "judge.untrusted.bench.BenchState.run",
    "judge.untrusted.bench.BenchState._run",
    "judge.untrusted.bench.BenchState._samples",
    "judge.untrusted.bench.BenchState._hold_gpu",
    "judge.untrusted.bench.BenchState.check",
    "judge.shared.bench_inputs.fill",
    "judge.shared.bench_inputs.call_seed",
    "judge.shared.bench_inputs.allocate",
    "torch.cuda.CUDAGraph.replay",
    "torch.cuda.graph",
    # The operator watch and PyTorch's operator record (judge.untrusted.guard, operators, op_record): the mode stack, the profiler,
    # the dispatch keys, the wrappers of redispatch, tensor printing and the per-element callbacks.
    "torch._C._push_on_torch_dispatch_stack",
    "torch._C._pop_torch_dispatch_stack",
    "torch._C._len_torch_dispatch_stack",
    "torch._C._get_dispatch_stack_at",
    "torch._C._set_dispatch_mode",
    "torch._C._get_dispatch_mode",
    "torch._C._unset_dispatch_mode",
    "torch._C._dispatch_tls_set_dispatch_key_excluded",
    "torch._C._dispatch_tls_is_dispatch_key_excluded",
    "torch._C._dispatch_has_kernel_for_dispatch_key",
    "torch._C._profiler._RecordFunctionFast",
    "torch.autograd.profiler.profile",
    "torch.autograd.profiler.profile.__enter__",
    "torch.autograd.profiler.profile.__exit__",
    "torch.autograd._enable_profiler",
    "torch.autograd._disable_profiler",
    "torch.autograd._prepare_profiler",
    "torch._ops.OpOverload.redispatch",
    "torch._tensor_str._str",
    "torch.Tensor.map_",
    "torch.Tensor.map2_",
    "torch.Tensor.apply_",
    "judge.untrusted.watch_state._state",
    "judge.untrusted.operators.ALLOWED_OPS",
    "judge.untrusted.watch_state._LIBRARY_DIRS",
    "judge.untrusted.watch_state._TRITON_DIRS",
    # The watch's one state, as each of its modules binds it (judge.untrusted.watch_state).
    "judge.untrusted.guard._state",
    "judge.untrusted.launches._state",
    "judge.untrusted.operators._state",
    "judge.untrusted.op_record._state",
    "judge.untrusted.spawns._state",
    # A factory problem's own operators (judge.untrusted.own_ops): how they are looked into, and the gate
    # every operator library is opened through.
    "torch._C._dispatch_library",
    "torch._C._dispatch_keys",
    "torch._C._dispatch_keyset_full_after",
    "judge.untrusted.own_ops._state",
]


# Namespaces whose every function must stay the same object: a submission
# that swaps any method of a tensor (say .detach, which the worker calls to
# send results) or any torch function changes what the judge sees.
WHOLE = [
    "torch.Tensor",
    "torch._C.TensorBase",
    "torch",
    "torch.nn.functional",
    "triton",
    "triton.language",
    "triton.runtime.jit",
    "triton.runtime.autotuner",
    "triton.runtime.interpreter",
    "time",
    "os",
    "threading",
    "_thread",
    "judge.shared.wire",
    "judge.untrusted.outputs",
    "judge.untrusted.guard",
    "judge.untrusted.integrity",
    "judge.untrusted.runner",
    "judge.untrusted.errors",
    "judge.untrusted.worker_start",
    "judge.untrusted.launches",
    "judge.untrusted.operators",
    "judge.untrusted.op_record",
    "judge.untrusted.spawns",
    "judge.untrusted.watch_state",
    "judge.untrusted.own_ops",
    "judge.untrusted.own_ops._State",
    "judge.untrusted.calls",
    "judge.untrusted.compiled",
    "judge.untrusted.streams",
    "judge.untrusted.streams._State",
    "judge.untrusted.streams.judges",
    "judge.untrusted.streams.timed",
    "judge.untrusted.lockdown",
    "judge.untrusted.addresses",
    "torch.cuda.graphs.CUDAGraph",
    "judge.untrusted.bench",
    "judge.untrusted.bench.BenchState",
    "judge.untrusted.samples",
    "judge.untrusted.samples.Sampling",
    "judge.untrusted.profiling",
    # The second clock (judge.untrusted.profiling): the profiler, its ranges and its records.
    "torch.profiler",
    "torch.profiler.profiler",
    "torch.autograd.profiler",
    "torch.autograd.profiler.profile",
    "torch.autograd.profiler_util",
    "torch._C._profiler",
    "torch._C._autograd",
    "torch._C._autograd._KinetoEvent",
    "torch._C._autograd._ProfilerResult",
    "torch._C._profiler._RecordFunctionFast",
    "judge.untrusted.runner.Worker",
    "judge.shared.wire.Reader",
    "torch.utils._python_dispatch",
    "torch.utils._python_dispatch.TorchDispatchMode",
    "torch.autograd",
    "torch.autograd.profiler",
    "torch._C._autograd",
    "torch._ops.OpOverload",
]


@functools.cache
def _disable_code():
    """The code object of torch._disable_dynamo's wrapper (None for a torch without it)."""
    try:
        import torch

        return torch._disable_dynamo(lambda: None).__code__
    except Exception:  # noqa: BLE001 - nothing is unwrapped then
        return None


def _ident(value) -> int:
    """id() of a value, where Dynamo's own "disable" wrapper counts as what it wraps.

    Importing Dynamo wraps `torch.manual_seed` in `torch._disable_dynamo`, once. The worker no longer
    imports Dynamo at its start (judge.untrusted.determinism, guard), so whether the wrapper is there
    depends on whether the submission's code happened to load Dynamo (torch.compile, some torch.library
    paths): without this, that read as tampering. A wrapper is recognised by its code object (only
    `torch._disable_dynamo` makes one) and unwrapped through its closure, the function it calls; one made
    by the submission around another function is that other function's id, and a change. (A few levels
    at most: a wrapper whose cell was pointed back at itself stays itself.)"""
    for _ in range(8):
        code = getattr(value, "__code__", None)
        if (
            code is None
            or code is not _disable_code()
            or "fn" not in code.co_freevars
            or not getattr(value, "__closure__", None)
        ):
            break
        try:
            value = value.__closure__[code.co_freevars.index("fn")].cell_contents
        except (ValueError, IndexError):  # an empty cell
            break
    return id(value)


def _functions(namespace, kept: dict) -> dict:
    """id() of each function, class or method descriptor in a module's or class's own dict (see _ident); each
    one is kept in ``kept`` (key -> the object)."""
    out = {}
    try:
        items = list(vars(namespace).items())
    except TypeError:
        return out
    for key, value in items:
        if callable(value) or isinstance(value, (staticmethod, classmethod, property)):
            out[key] = _ident(value)
            kept[key] = value
    return out


_MODULE_PARTS: dict[str, int] = {}  # dotted name -> how many of its leading parts name its module (see _resolve)


def _resolve(dotted: str):
    """The object a dotted name leads to: the longest importable prefix, then attributes. Which prefix is the
    module is found once per name (a failed import searches the path: most of a snapshot's time when it was
    tried again at every call); the module itself is looked up each time, as import_module does."""
    parts = dotted.split(".")
    known = _MODULE_PARTS.get(dotted)
    for i in [known] if known else range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        _MODULE_PARTS[dotted] = i
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise LookupError(dotted)


def _instance(label: str, obj, keep: list) -> dict:
    """What must not change in one of the worker's objects (see the module's docstring)."""
    import types

    out = {}
    try:
        items = list(vars(obj).items())
    except TypeError:
        return out
    for key, value in items:
        if callable(value) or isinstance(value, types.ModuleType):
            out[f"{label}.{key}"] = ("object", id(value))
            keep.append(value)
        elif isinstance(value, (int, str, bytes)):
            out[f"{label}.{key}"] = ("value", value)
    return out


def snapshot(objects: dict | None = None) -> dict:
    """The state to compare; ``objects``: label -> one of the worker's own objects (the Worker, its reader,
    the guard's state), whose instance attributes are compared as well."""
    import torch

    state = {}
    # Every object whose id() is recorded, held by the snapshot: an id is unique only among objects alive at
    # once, so a function deleted from its module and replaced by another could otherwise take its address,
    # and its id, and look unchanged (tests/test_guard.py: 14 of 16 functions replaced so went unreported).
    # Held, they also let changed() ask "the same object?" (``is``) before it computes anything.
    kept = {"identities": {}, "spaces": {}, "objects": []}
    for name, read in SETTINGS.items():
        state[name] = _setting(read, torch)
    for name in IDENTITIES:
        try:
            obj = _resolve(name)
            state[name] = _ident(obj)
            kept["identities"][name] = obj
        except Exception:  # noqa: BLE001
            state[name] = "<absent>"
    for space in WHOLE:
        entries: dict = {}
        try:
            functions = _functions(_resolve(space), entries)
        except Exception:  # noqa: BLE001 - e.g. no torch.cuda functions in a CPU build
            continue
        kept["spaces"][space] = entries
        for key, ident in functions.items():
            state[f"{space}.{key}"] = ident
    objects = dict(objects or {})
    for label, obj in objects.items():
        state.update(_instance(label, obj, kept["objects"]))
    state[_OBJECTS] = objects
    state[_KEPT] = kept
    return state


def _setting(read, torch) -> str:
    try:
        return repr(read(torch))
    except Exception:  # noqa: BLE001 - e.g. no CUDA build
        return "<absent>"


_OBJECTS = "<objects>"  # the objects a snapshot covered, compared again by changed()
_KEPT = "<kept>"  # the objects whose ids it recorded, alive as long as it is
_MISSING = object()


def changed(before: dict) -> list[str]:
    """Names whose value or identity differs from ``before`` (names that appeared since are not compared:
    modules fill in lazily), and callables that appeared on one of the worker's objects.

    What a fresh snapshot would show against ``before``, without making one: a name still bound to the very
    object ``before`` holds is unchanged, and only another object's identity is computed (_ident). After every
    call of the submission, so it is kept cheap (docs/measurements: worker starts, the integrity check)."""
    import torch

    kept = before[_KEPT]
    found = set()
    for name, read in SETTINGS.items():
        if name in before and _setting(read, torch) != before[name]:
            found.add(name)
    for name in IDENTITIES:
        if name not in before:
            continue
        old = kept["identities"].get(name, _MISSING)
        try:
            obj = _resolve(name)
        except Exception:  # noqa: BLE001
            if old is not _MISSING:
                found.add(name)  # there before, gone now
            continue
        if obj is not old and _ident(obj) != before[name]:
            found.add(name)
    for space, entries in kept["spaces"].items():
        try:
            now = vars(_resolve(space))
        except Exception:  # noqa: BLE001 - the namespace itself is gone: all of its names are
            found.update(f"{space}.{key}" for key in entries)
            continue
        for key, old in entries.items():
            new = now.get(key, _MISSING)
            if new is old:
                continue
            name = f"{space}.{key}"
            if new is _MISSING and not _lazy(name) or new is not _MISSING and _ident(new) != before[name]:
                found.add(name)
    objects = before.get(_OBJECTS) or {}
    labels = tuple(f"{label}." for label in objects)
    now_objects: dict = {}
    for label, obj in objects.items():
        now_objects.update(_instance(label, obj, []))
    for name, value in before.items():
        if name.startswith(labels) and (now_objects.get(name, _MISSING) != value):
            found.add(name)
    found |= {name for name, value in now_objects.items() if name not in before and value[0] == "object"}
    return sorted(found)


def _lazy(name: str) -> bool:
    """A name that may legitimately vanish from a namespace snapshot (none known): report it."""
    return False


# --------------------------------------------------------------------------- the file's kernels


def kernels_of(namespace: dict) -> dict:
    """name -> the ``@triton.jit`` function bound under that name in the submission's module (an autotuner or
    heuristics wrapper looked through), for ``rewired``."""
    from triton.runtime.jit import JITFunction

    try:
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:  # pragma: no cover - a Triton without the interpreter
        InterpretedFunction = ()  # noqa: N806
    out = {}
    for name, obj in list(namespace.items()):
        depth = 0
        while obj is not None and not isinstance(obj, (JITFunction, InterpretedFunction)) and depth < 8:
            obj, depth = getattr(obj, "fn", None) if not isinstance(obj, type) else None, depth + 1
        if obj is not None and isinstance(obj, (JITFunction, InterpretedFunction)):
            out[name] = obj
    return out


def rewired(kernels: dict, source: str | None = None, path: str | None = None) -> list[str]:
    """Kernels that would run another body than their own source's. In the interpreter a kernel runs what
    its rewriter made of ``kernel.fn``: a rewriter (or a cached rewrite) taken from another kernel runs
    that kernel's body instead (a red team swapped in an empty one and computed the answer on the host).

    ``source``: the text of the file at ``path`` as the worker read it before the import (kernels defined in
    other files, Triton's own ``@jit`` helpers imported by name, are not compared). Triton reads a kernel's source
    again, through ``inspect`` (the interpreter at its first launch, the compiler at the decoration), and
    what it reads need not be that text: ``functools.wraps`` leaves a ``__wrapped__`` that inspect follows
    to another function, and a file rewritten on disk (then restored) is read as it was at that moment. So
    what Triton made is compared with what it makes of the text the judge judges (see _drifted)."""
    try:
        from triton.runtime.interpreter import FunctionRewriter, InterpretedFunction
    except ImportError:  # pragma: no cover
        FunctionRewriter = InterpretedFunction = None  # noqa: N806
    found = []
    for name, k in kernels.items():
        if InterpretedFunction is not None and isinstance(k, InterpretedFunction):
            fn = vars(k).get("fn")
            rw = vars(k).get("rewriter")
            made = (
                InterpretedFunction.rewritten_fn.get(fn)
                if isinstance(getattr(InterpretedFunction, "rewritten_fn", None), dict)
                else None
            )
            if (
                type(rw) is not FunctionRewriter
                or rw.fn is not fn
                or made is not None
                and getattr(made, "__name__", None) != getattr(fn, "__name__", None)
            ):
                found.append(f"the kernel {name} (it would run another function than its own)")
                continue
        if source is not None and path and _drifted(k, source, path):
            found.append(f"the kernel {name} (Triton compiled another source than your file's text for it)")
    return found


def _own_block(fn, source: str) -> list[str] | None:
    """The lines of ``fn``'s definition (its decorators on) in ``source``, found from its code object: where
    Python compiled it, whatever ``inspect`` would say now."""
    import inspect

    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    lines = source.splitlines(keepends=True)
    start = code.co_firstlineno - 1
    if not 0 <= start < len(lines):
        return None
    try:
        return inspect.getblock(lines[start:])
    except Exception:  # noqa: BLE001 - a block inspect cannot delimit: nothing to compare
        return None


# (kernel, what Triton made of it, the text) -> the finding: what was made is compared once, not after
# every call (tens of milliseconds a call for 98's kernels in the interpreter). The objects are held in the value, so
# an id in the key is never reused while its entry lives.
_checked: dict = {}


def _made(k):
    """(the kernel's function, what the interpreter made of it, or None before its first launch, the source
    the compiler compiles, or None, whether it is the interpreter's)."""
    fn = vars(k).get("fn") if hasattr(k, "__dict__") else None
    try:
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:  # pragma: no cover
        InterpretedFunction = None  # noqa: N806
    if InterpretedFunction is not None and isinstance(k, InterpretedFunction):
        return fn, InterpretedFunction.rewritten_fn.get(fn), None, True
    src = getattr(k, "src", None)
    return fn, None, src if isinstance(src, str) else None, False


def _drifted(k, source: str, path: str) -> bool:
    fn, made, src, interpreted = _made(k)
    made_code = getattr(made, "__code__", None)
    key = (id(k), id(fn), id(made), id(made_code), src, hash(source), path)
    hit = _checked.get(key)
    if hit is not None and hit[0] is k and hit[1] is fn and hit[2] is made and hit[3] is made_code:
        return hit[4]
    found = _drifted_now(fn, made, src, interpreted, vars(k).get("kwargs") or {}, source, path)
    if made is not None or src is not None:  # a kernel not launched yet is compared again later
        _checked[key] = (k, fn, made, made_code, found)
    return found


def _drifted_now(fn, made, src, interpreted: bool, kwargs: dict, source: str, path: str) -> bool:
    """Whether what Triton made of a kernel (_made) differs from what it makes of ``source``'s text of it.

    Interpreter: the function its rewriter compiled (cached at the first launch), against the same rewrite
    of the text (code compared without line numbers). Compiler: the ``src`` it compiles from, against the
    text from the ``def`` on, dedented, as JITFunction takes it."""
    import os
    import re
    import textwrap

    code = getattr(fn, "__code__", None)
    if code is None or os.path.realpath(code.co_filename) != os.path.realpath(path):
        return False
    block = _own_block(fn, source)
    if not block:
        return True  # compiled from this file, yet no definition there where Python says it starts
    if interpreted:
        if made is None:
            return False  # not launched yet: it is rewritten (and compared) after its first launch
        from triton.runtime.interpreter import FunctionRewriter

        rw = FunctionRewriter(fn, **kwargs)
        rw.def_lineno, rw.def_file_lineno = rw._find_def(block), 1  # (line numbers are not compared)
        compiled = compile(rw._transform_ast(rw._prepare_source(block)), filename="<judge>", mode="exec")
        want = next((c for c in compiled.co_consts if getattr(c, "co_name", None) == fn.__name__), None)
        return want is None or not _same_code(getattr(made, "__code__", None), want)
    if src is None:
        return False
    text = textwrap.dedent("".join(block))
    m = re.search(r"^def\s+\w+\s*\(", text, re.MULTILINE)
    return m is None or src.strip() != text[m.start() :].strip()


def _same_code(a, b, depth: int = 0) -> bool:
    """Two code objects alike but for their line numbers and file names."""
    if a is None or b is None or depth > 20:
        return False
    if (
        a.co_code != b.co_code
        or a.co_names != b.co_names
        or a.co_varnames != b.co_varnames
        or a.co_freevars != b.co_freevars
        or len(a.co_consts) != len(b.co_consts)
    ):
        return False
    for x, y in zip(a.co_consts, b.co_consts):
        if hasattr(x, "co_code") or hasattr(y, "co_code"):
            if not _same_code(x, y, depth + 1):
                return False
        elif type(x) is not type(y) or (x != y and repr(x) != repr(y)):  # (repr: a NaN constant)
            return False
    return True
