"""The file's kernels, defined from its source in a namespace of Triton alone.

The replay worker (judge.untrusted.replay) and the GPU compiler's front end (judge.untrusted.frontend)
compile, from the file's source, only the top-level ``@triton.jit`` functions, ``@triton.constexpr_function``
helpers and constants (judge.shared.kernel_source), in a namespace that holds nothing but ``triton``,
``triton.language``, ``math`` and a few harmless built-ins: in the interpreter a kernel body is Python, and
this namespace is all it can reach by name. The judged worker holds its kernels' constants to the values
bound here (judge.untrusted.constants).
"""

from __future__ import annotations

import builtins

from judge.shared import kernel_source

SAFE_BUILTINS = {
    name: getattr(builtins, name)
    for name in (
        "abs",
        "all",
        "any",
        "bool",
        "dict",
        "divmod",
        "enumerate",
        "filter",
        "float",
        "int",
        "isinstance",
        "len",
        "list",
        "map",
        "max",
        "min",
        "next",
        "iter",
        "pow",
        "print",
        "range",
        "repr",
        "reversed",
        "round",
        "slice",
        "sorted",
        "str",
        "sum",
        "tuple",
        "zip",
        "ValueError",
        "TypeError",
        "AssertionError",
        "RuntimeError",
        "IndexError",
        "KeyError",
        "NotImplementedError",
        "ZeroDivisionError",
        "ArithmeticError",
        "Exception",
    )
}
# Names Triton's interpreter adds to a kernel's globals that its rewritten code needs.
INTERPRETER_NAMES = ("interpreter_semantic", "_InterpreterComparison")


def _bind(ns: dict, b: kernel_source.Bind) -> None:
    import importlib

    module = importlib.import_module(b.module)
    if b.attr is None:
        ns[b.name] = module
    elif b.name == "*":
        names = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
        for n in names:
            ns[n] = getattr(module, n)
    elif hasattr(module, b.attr):
        ns[b.name] = getattr(module, b.attr)
    else:
        ns[b.name] = importlib.import_module(f"{b.module}.{b.attr}")


def load_kernels(path: str, interpret: bool) -> tuple[dict, list[str], list[str]]:
    """(the namespace holding the file's kernels and constants, the kernels' names, what could not be defined)."""
    source = kernel_source.read_source(path)
    extracted = kernel_source.extract(source)
    ns, skipped = _define(extracted, path)
    if interpret:
        _prepare_interpreted(ns)
    return ns, extracted.kernels, skipped


def constant_values(path: str, source: str) -> dict:
    """The file's constants (judge.shared.kernel_source) as this process binds them for the kernels it
    replays: name -> value. The judged worker holds its kernels' globals to these at every launch
    (judge.untrusted.constants), so that the kernel it runs is the kernel replayed."""
    extracted = kernel_source.extract(source)
    ns, _ = _define(extracted, path, kinds=("constant",))
    constants = {
        step.name for step in extracted.steps if isinstance(step, kernel_source.Code) and step.kind == "constant"
    }
    return {name: ns[name] for name in constants if name in ns}


def _define(extracted, path: str, kinds=("kernel", "constexpr_function", "constant")) -> tuple[dict, list[str]]:
    """Run the extracted steps (the imports of Triton and math, and the definitions of ``kinds``) in a
    namespace of Triton alone: (the namespace, what could not be defined)."""
    import ast

    ns: dict = {"__builtins__": dict(SAFE_BUILTINS), "__name__": "replayed_kernels"}
    skipped = []
    for step in extracted.steps:
        if isinstance(step, kernel_source.Code) and step.kind not in kinds:
            continue
        try:
            if isinstance(step, kernel_source.Bind):
                _bind(ns, step)
            elif isinstance(step, kernel_source.TryBinds):
                for alternative in step.alternatives:
                    try:
                        for b in alternative:
                            _bind(ns, b)
                        break
                    except (ImportError, AttributeError):
                        continue
            else:
                module = ast.Module(body=[step.node], type_ignores=[])
                code = compile(module, path, "exec", flags=extracted.future_flags, dont_inherit=True)
                exec(code, ns)  # noqa: S102 - the file's own kernel definitions, in a namespace of Triton alone
        except Exception as exc:  # noqa: BLE001 - a definition that fails here is reported, not fatal
            name = getattr(step, "name", "?")
            skipped.append(f"{name}: {type(exc).__name__}: {str(exc)[:200]}")
            ns.pop(name, None)
    for name in extracted.unbound:
        ns.pop(name, None)
    return ns, skipped


def _prepare_interpreted(ns: dict) -> None:
    """Rewrite every interpreted kernel now, then take away what the interpreter put in reach.

    Triton's interpreter rewrites a kernel's source on its first launch and, doing
    so, copies its own module's globals (numpy, torch, inspect, ...) into the
    kernel's globals. Done here, before any launch, those can be removed again.
    """
    try:
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:  # pragma: no cover
        return
    before = set(ns)
    for value in list(ns.values()):
        if isinstance(value, InterpretedFunction):
            try:
                value.rewrite()
            except Exception:  # noqa: BLE001 - it fails again, and is reported, at its launch
                pass
    for name in set(ns) - before - set(INTERPRETER_NAMES):
        del ns[name]
