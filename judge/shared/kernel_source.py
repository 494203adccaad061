"""A file's Triton kernels, found in its source with ``ast``: never by importing it.

Both sides use this: the judge, to know which kernel names a recorded launch
may carry; the replay worker (judge.untrusted.replay), to compile those kernels
and nothing else of the file. What it keeps, in source order:

* imports of ``triton`` (and its submodules) and ``math``, as bindings to make
  (the replay does them itself: a kernel gets no ``__import__``);
* top-level functions decorated with ``@triton.jit`` (in any spelling the
  file's imports give it), with every other decorator removed: an
  ``@triton.autotune`` or ``@triton.heuristics`` above it has already made its
  choice, which the record of the launch carries; and functions decorated with
  ``@triton.constexpr_function``;
* top-level constants: a name assigned an expression of literals, other kept
  constants, Triton and ``math`` (``LOG2E = 1.4426950408889634``,
  ``BLOCK = tl.constexpr(128)``, ``RCP = 1 / math.log(2)``).

A name the file binds in any other way at top level (a plain function, a
class, an import of another module, a computed value), or declares ``global``
in a function (it may change while the file runs), is left unbound: a kernel
that uses it cannot be replayed (and could not be compiled for a GPU either).
Standard library only.
"""

from __future__ import annotations
import __future__ as _future

import ast
import copy
from dataclasses import dataclass, field

ALLOWED_MODULES = ("triton", "math")
# Built-in functions a constant's expression may call.
CONST_CALLS = frozenset({"int", "float", "bool", "abs", "min", "max", "round", "pow"})

# The GPU architecture interpreted kernels are compiled for, to check that they would compile at all
# (judge.untrusted.frontend): Hopper's (sm_90), that of the GPUs the judge times on.
COMPILE_ARCH = 90


@dataclass(frozen=True)
class Bind:
    """Bind ``name`` to module ``module`` (``attr`` None) or to its attribute ``attr``."""

    name: str
    module: str
    attr: str | None = None


@dataclass(frozen=True)
class TryBinds:
    """Imports tried in turn (a ``try: import ... except ImportError: import ...`` block)."""

    alternatives: tuple[tuple[Bind, ...], ...]


@dataclass(frozen=True)
class Code:
    """A statement to execute: a kernel definition (decorated with @triton.jit alone) or a constant."""

    node: ast.stmt
    name: str
    kind: str  # "kernel", "constexpr_function" or "constant"


@dataclass
class Extracted:
    kernels: list[str] = field(default_factory=list)  # top-level @triton.jit functions, in source order
    steps: list = field(default_factory=list)  # Bind, TryBinds and Code, in source order
    unbound: set[str] = field(default_factory=set)  # names to remove once every step ran
    future_flags: int = 0  # compile flags of the file's ``from __future__`` imports
    impure: list = field(default_factory=list)  # (line, function, why) for each constexpr function that is not pure


def _dotted(expr) -> str | None:
    parts = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if isinstance(expr, ast.Name):
        parts.append(expr.id)
        return ".".join(reversed(parts))
    return None


def _allowed_module(module: str) -> bool:
    return any(module == m or module.startswith(m + ".") for m in ALLOWED_MODULES)


def _import_binds(node) -> tuple[list[Bind], list[str]]:
    """(the bindings an allowed import makes, the names an import of anything else binds)."""
    binds, other = [], []
    if isinstance(node, ast.Import):
        for a in node.names:
            # ``import a.b as x`` binds x to a.b; ``import a.b`` binds a to a.
            name, module = (a.asname, a.name) if a.asname else (a.name.split(".")[0], a.name.split(".")[0])
            if _allowed_module(a.name):
                binds.append(Bind(name, module))
            else:
                other.append(name)
    elif isinstance(node, ast.ImportFrom):
        module = node.module or ""
        ok = node.level == 0 and _allowed_module(module)
        for a in node.names:
            name = a.asname or a.name
            if a.name == "*":
                if ok:
                    binds.append(Bind("*", module))
                continue
            if ok:
                binds.append(Bind(name, module, a.name))
            else:
                other.append(name)
    return binds, other


def _bound_names(node) -> set[str]:
    """Names a top-level statement binds at module scope (not inside functions or classes it defines)."""
    names = set()

    def visit(n):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(n.name)
            for d in n.decorator_list:
                visit(d)
            return
        if isinstance(n, ast.Lambda):
            return
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            for a in n.names:
                if a.name != "*":
                    names.add(a.asname or a.name.split(".")[0])
            return
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            names.add(n.id)
        if isinstance(n, ast.ExceptHandler) and n.name:
            names.add(n.name)
        if isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name:
            names.add(n.name)
        if isinstance(n, ast.MatchMapping) and n.rest:
            names.add(n.rest)
        for child in ast.iter_child_nodes(n):
            visit(child)

    visit(node)
    return names


def _globals_declared(tree) -> set[str]:
    return {name for n in ast.walk(tree) if isinstance(n, (ast.Global, ast.Nonlocal)) for name in n.names}


class _Scope:
    def __init__(self):
        self.modules: set[str] = set()  # names bound to an allowed module
        self.imported: set[str] = set()  # names bound to something from an allowed module
        self.constants: set[str] = set()
        self.triton: set[str] = set()  # names of the triton package itself
        self.jit: set[str] = set()  # names bound to triton.jit
        self.cfn: set[str] = set()  # names bound to triton.constexpr_function

    def known(self) -> set[str]:
        return self.modules | self.imported | self.constants

    def bind(self, b: Bind) -> None:
        if b.name == "*":
            return
        if b.attr is None:
            self.modules.add(b.name)
            if b.module == "triton":
                self.triton.add(b.name)
        else:
            self.imported.add(b.name)
            if b.module == "triton" and b.attr == "jit":
                self.jit.add(b.name)
            if b.module == "triton" and b.attr == "constexpr_function":
                self.cfn.add(b.name)

    def forget(self, names) -> None:
        for s in (self.modules, self.imported, self.constants, self.triton, self.jit, self.cfn):
            s.difference_update(names)

    def decorator_kind(self, dec) -> str | None:
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = _dotted(target)
        if name is None:
            return None
        head, _, attr = name.rpartition(".")
        if (head in self.triton and attr == "jit") or name in self.jit:
            return "kernel"
        if (head in self.triton and attr == "constexpr_function") or name in self.cfn:
            return "constexpr_function"
        return None

    def constant_expr(self, e) -> bool:
        """An expression of literals, kept constants, and Triton's or math's functions and values."""
        if isinstance(e, ast.Constant):
            return isinstance(e.value, (int, float, bool, str, type(None)))
        if isinstance(e, ast.Name):
            return e.id in self.known()
        if isinstance(e, ast.Attribute):
            name = _dotted(e)
            return (
                name is not None
                and name.split(".")[0] in self.modules | self.imported
                and not any(p.startswith("_") for p in name.split(".")[1:])
            )
        if isinstance(e, ast.UnaryOp):
            return self.constant_expr(e.operand)
        if isinstance(e, ast.BinOp):
            return self.constant_expr(e.left) and self.constant_expr(e.right)
        if isinstance(e, ast.BoolOp):
            return all(self.constant_expr(v) for v in e.values)
        if isinstance(e, ast.Compare):
            return self.constant_expr(e.left) and all(self.constant_expr(c) for c in e.comparators)
        if isinstance(e, ast.IfExp):
            return all(self.constant_expr(x) for x in (e.test, e.body, e.orelse))
        if isinstance(e, ast.Tuple):
            return all(self.constant_expr(x) for x in e.elts)
        if isinstance(e, ast.Call):
            func = e.func
            if isinstance(func, ast.Name):
                ok = func.id in CONST_CALLS or func.id in self.imported
            else:
                ok = self.constant_expr(func)
            return (
                ok
                and all(self.constant_expr(a) and not isinstance(a, ast.Starred) for a in e.args)
                and all(k.arg is not None and self.constant_expr(k.value) for k in e.keywords)
            )
        return False


def _try_of_imports(node) -> TryBinds | None:
    if not isinstance(node, ast.Try) or node.orelse or node.finalbody:
        return None
    blocks = [node.body] + [h.body for h in node.handlers]
    alternatives = []
    for block in blocks:
        binds = []
        for stmt in block:
            if isinstance(stmt, ast.Pass):
                continue
            if not isinstance(stmt, (ast.Import, ast.ImportFrom)):
                return None
            ok, other = _import_binds(stmt)
            if other:
                return None
            binds += ok
        alternatives.append(tuple(binds))
    return TryBinds(tuple(alternatives))


def extract(source: str) -> Extracted:
    """The kernels, constants and Triton imports of a file's source (raises SyntaxError as ``ast.parse``)."""
    tree = ast.parse(source)
    out = Extracted()
    scope = _Scope()
    state: dict[str, bool] = {}  # name -> whether its last top-level binding is kept
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            for a in node.names:
                feature = getattr(_future, a.name, None)
                if feature is not None:
                    out.future_flags |= feature.compiler_flag
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            binds, other = _import_binds(node)
            for b in binds:
                out.steps.append(b)
                scope.bind(b)
                state[b.name] = True
            scope.forget(other)
            state.update({n: False for n in other})
            continue
        tried = _try_of_imports(node)
        if tried is not None:
            out.steps.append(tried)
            for alt in tried.alternatives:
                for b in alt:
                    scope.bind(b)
                    state[b.name] = True
            continue
        if isinstance(node, ast.FunctionDef):
            kinds = [(scope.decorator_kind(d), d) for d in node.decorator_list]
            kept = [(k, d) for k, d in kinds if k is not None]
            if kept:
                kind, dec = kept[-1]  # the innermost Triton decorator
                fn = copy.copy(node)
                fn.decorator_list = [dec]
                out.steps.append(Code(fn, node.name, kind))
                if kind == "kernel":
                    if node.name in out.kernels:
                        out.kernels.remove(node.name)
                    out.kernels.append(node.name)
                scope.forget({node.name})
                scope.imported.add(node.name)  # usable by later constants (a constexpr_function's result)
                state[node.name] = True
                continue
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = node.value
            if value is not None and all(isinstance(t, ast.Name) for t in targets) and scope.constant_expr(value):
                names = [t.id for t in targets]
                out.steps.append(Code(node, names[0], "constant"))
                out.kernels = [k for k in out.kernels if k not in names]
                scope.forget(names)
                scope.constants.update(names)
                state.update({n: True for n in names})
                continue
        # Anything else (a plain function: a kernel that calls one does not compile
        # for a GPU; a class; a computed value) leaves the names it binds unbound.
        names = _bound_names(node)
        scope.forget(names)
        state.update({n: False for n in names})
        if names & set(out.kernels):
            out.kernels = [k for k in out.kernels if k not in names]
    out.unbound = {n for n, kept in state.items() if not kept} | _globals_declared(tree)
    out.kernels = [k for k in out.kernels if k not in out.unbound]
    kept = {n for n, k in state.items() if k} - out.unbound
    modules = {}  # a kept name bound to a module or to a module's attribute -> its dotted path
    for step in out.steps:
        binds = (
            [step]
            if isinstance(step, Bind)
            else [b for alt in step.alternatives for b in alt]
            if isinstance(step, TryBinds)
            else []
        )
        for b in binds:
            if b.name != "*" and b.name in kept:
                modules[b.name] = b.module if b.attr is None else f"{b.module}.{b.attr}"
    for step in out.steps:
        if isinstance(step, Code) and step.kind == "constexpr_function":
            out.impure += [(line, step.name, why) for line, why in _impurities(step.node, kept, modules)]
    return out


# Built-ins a constexpr function may call or name: pure functions of their arguments, whatever process runs
# them. Not hash, id, repr, str, ascii or format: an object's hash or text can hold its address, and a string's
# hash its process's seed (the workers share one, judge.sandbox.base.HASH_SEED; a function's address they
# do not).
PURE_BUILTINS = CONST_CALLS | frozenset(
    {
        "len",
        "range",
        "isinstance",
        "tuple",
        "all",
        "any",
        "sum",
        "sorted",
        "reversed",
        "zip",
        "enumerate",
        "divmod",
        "True",
        "False",
        "None",
        "ValueError",
        "TypeError",
        "AssertionError",
    }
)
# What of Triton a constexpr function may reach through a module: its language (types, dtypes, constants) and
# a few pure helpers; not its runtime state (triton.knobs: the kernel cache's path, which differs from the
# replay's; triton.runtime: the driver), which is the process's, not the arguments'.
PURE_MODULES = ("triton.language", "math")
PURE_TRITON = frozenset({"triton.cdiv", "triton.next_power_of_2", "triton.constexpr", "triton.language"})


def _module_path(n: ast.Attribute, modules: dict) -> str | None:
    """The dotted path an attribute chain reads through a module the file imported, or None."""
    name = _dotted(n)
    if name is None:
        return None
    head, _, rest = name.partition(".")
    if head not in modules:
        return None
    return f"{modules[head]}.{rest}" if rest else modules[head]


def _impure_module_path(path: str) -> bool:
    if any(path == m or path.startswith(m + ".") for m in PURE_MODULES):
        return False
    return not any(path == t or path.startswith(t + ".") for t in PURE_TRITON)


def _impurities(fn: ast.FunctionDef, kept: set[str], modules: dict | None = None) -> list[tuple[int, str]]:
    """Why a ``@triton.constexpr_function`` is not a pure function of its arguments and the file's kept names.

    Its body is host Python that runs while a kernel is compiled (or interpreted): in
    the judged worker, and again, compiled from the source alone, in the replay
    (judge.untrusted.replay). If it could see anything else (a name the file binds
    at run time, state it keeps in a mutable default, whether a lookup fails), it
    could tell the two apart and make the replayed kernel honest and the judged one
    a no-op: a red team got AC that way. So it may read only its arguments, its own
    locals, the file's kept constants, Triton's language, math and pure built-ins; no try,
    global, nested function, mutable default or private attribute; and nothing whose
    value depends on where objects lie in memory or on the process's hash seed (an
    object's hash or text, a set's order).
    """
    modules = modules or {}
    parents = {id(child): node for node in ast.walk(fn) for child in ast.iter_child_nodes(node)}
    decorators = {id(x) for d in fn.decorator_list for x in ast.walk(d)}  # the decorator itself: not its body
    found = []
    args = fn.args
    params = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    params |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    locals_ = set(params)
    for n in ast.walk(fn):
        if n is fn:
            continue
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            locals_.add(n.id)
        elif isinstance(n, (ast.comprehension,)):
            locals_ |= {x.id for x in ast.walk(n.target) if isinstance(x, ast.Name)}
    scope = _Scope()
    scope.constants = set(kept)
    for d in args.defaults + [d for d in args.kw_defaults if d is not None]:
        if not scope.constant_expr(d):
            found.append((d.lineno, "a default that is not a constant (it can keep state between calls)"))
    allowed = locals_ | kept | PURE_BUILTINS
    for n in ast.walk(fn):
        if n is fn or id(n) in decorators:
            continue
        if isinstance(n, (ast.Try, ast.ExceptHandler)) or type(n).__name__ == "TryStar":
            found.append((n.lineno, "a try statement (a failing lookup can tell one process from another)"))
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            found.append((n.lineno, f"{type(n).__name__.lower()} {', '.join(n.names)}"))
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            found.append((n.lineno, "a nested function or class"))
        elif isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)):
            found.append((n.lineno, "a generator"))
        elif isinstance(n, ast.Attribute) and n.attr.startswith("_"):
            found.append((n.lineno, f"the private attribute .{n.attr}"))
        elif isinstance(n, ast.Attribute) and n.attr in ("format", "format_map"):
            found.append((n.lineno, f"str.{n.attr} (an object's text can hold its address)"))
        elif (
            isinstance(n, ast.Attribute)
            and not isinstance(parents.get(id(n)), ast.Attribute)
            and (path := _module_path(n, modules)) is not None
            and _impure_module_path(path)
        ):
            found.append((n.lineno, f"{path} (Triton's state in the process, not a function of the arguments)"))
        elif (
            isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load)
            and n.id in modules
            and not isinstance(parents.get(id(n)), ast.Attribute)
            and _impure_module_path(modules[n.id])
        ):
            found.append((n.lineno, f"the module {n.id} as a value (only what it holds may be read)"))
        elif isinstance(n, (ast.Set, ast.SetComp)):
            found.append(
                (n.lineno, "a set (its order follows its items' hashes, which can differ from one process to another)")
            )
        elif isinstance(n, ast.FormattedValue) or (
            isinstance(n, ast.BinOp)
            and isinstance(n.op, ast.Mod)
            and (
                isinstance(n.left, ast.JoinedStr) or isinstance(n.left, ast.Constant) and isinstance(n.left.value, str)
            )
        ):
            found.append((n.lineno, "a formatted string (an object's text can hold its address)"))
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in allowed:
            found.append(
                (n.lineno, f"the name {n.id}, which is neither one of its arguments nor a constant, Triton or math")
            )
        elif isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            if any(not isinstance(t, (ast.Name, ast.Tuple)) for t in targets):
                found.append((n.lineno, "an assignment to an attribute or an item (it can keep state)"))
    seen, out = set(), []
    for line, why in sorted(found):
        if why not in seen:
            seen.add(why)
            out.append((line, why))
    return out


def read_source(path) -> str:
    """The text of the file at ``path`` as Python's import reads it: UTF-8, a leading byte-order mark dropped
    (raises OSError, UnicodeDecodeError). Every part of the judge that reads a submission's text reads it
    here, so that the scan, the kernels the replay compiles and the text the worker holds its kernels to are
    the program Python runs."""
    with open(path, "rb") as f:
        return f.read().decode("utf-8-sig")


def kernel_names(source: str) -> list[str]:
    """The names of the file's top-level ``@triton.jit`` functions ([] if it does not parse)."""
    try:
        return extract(source).kernels
    except (SyntaxError, ValueError, RecursionError):
        return []
