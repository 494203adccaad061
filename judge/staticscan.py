"""A static scan of a submission's source for tampering, before anything runs.

A kernel exercise needs torch, triton, math and numbers; it never needs to walk
the garbage collector or the call stack, load C libraries, start processes or
threads, read the environment, write raw file descriptors, run generated code,
swap out functions of torch, triton or the clock, or reach into the judge.
Each of those is how a published kernel-judge exploit worked; each is reported
as RJ with its line. Tuned so that no accepted solution in the corpus, and none
of the course material's kernels, raises anything.

This reads and parses the source; it never imports or runs it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from judge.scan_tables import (
    ALLOWED_IMPORTS,
    BUILTIN_NAMES,
    FORBIDDEN_ATTRIBUTES,
    FORBIDDEN_CALLS,
    FORBIDDEN_MODULES,
    FORBIDDEN_NAMES,
    LANGUAGE_CLASSES,
    LAUNCH_METHODS,
    NAME_LOOKUPS,
    PRIVATE_ROOTS,
    PROTECTED_ROOTS,
    SELF_MATCHING,
    UNLISTED_WHY,
)

# The non-root parts of every forbidden chain: a class pattern on an unknown
# subject that reads one of these (case object(environ=e)) may be reading it.
_CHAIN_PARTS = None


@dataclass(frozen=True)
class Finding:
    line: int
    code: str  # the rule, e.g. "import ctypes"
    why: str

    def message(self) -> str:
        return f"line {self.line}: {self.code} ({self.why})"


def _installed(root: str) -> bool:
    """Whether ``root`` can be imported here (the judge's environment is the workers'), without importing it."""
    import importlib.util
    import sys

    if root in sys.builtin_module_names or root in sys.modules:
        return True
    try:
        return importlib.util.find_spec(root) is not None
    except (ImportError, ValueError):
        return False


def _matches(full: str, chain: str) -> bool:
    """``chain`` as a run of whole components anywhere in ``full``: os.sys.modules matches sys.modules."""
    parts, want = full.split("."), chain.split(".")
    return any(parts[i : i + len(want)] == want for i in range(len(parts) - len(want) + 1))


def _dotted(node) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _private_torch(full: str) -> str | None:
    """The first private component of a torch chain ("torch.utils._python_dispatch" -> "_python_dispatch")."""
    parts = full.split(".")
    if parts[0] not in PRIVATE_ROOTS:
        return None
    for part in parts[1:]:
        if part.startswith("_") and not (part.startswith("__") and part.endswith("__")):
            return part
    return None


def _chain_parts() -> set:
    global _CHAIN_PARTS
    if _CHAIN_PARTS is None:
        _CHAIN_PARTS = {part for chain in FORBIDDEN_ATTRIBUTES for part in chain.split(".")[1:]}
    return _CHAIN_PARTS


def _format_fields(text: str) -> list[str]:
    """The attribute names a format string's fields read ("{0.__class__}" -> ["__class__"]); [] when it is none."""
    import _string
    import string

    names = []
    try:
        for _literal, field, spec, _conversion in string.Formatter().parse(text):
            if field:
                _first, rest = _string.formatter_field_name_split(field)
                names += [key for is_attr, key in rest if is_attr]
            if spec:  # a nested field: "{0:{1.attr}}"
                names += _format_fields(spec)
    except (ValueError, TypeError):
        return names
    return names


class _Scanner(ast.NodeVisitor):
    def __init__(self, allow: tuple[str, ...] = ()):
        # The rules a problem lifted (problem.toml [rules] allow): 99 registers a custom operator, so it may use
        # torch.library; at run time the worker confines it to the namespace the judge gives (judge.untrusted.guard).
        self.modules = {k: v for k, v in FORBIDDEN_MODULES.items() if k not in allow}
        self.allowed = set(allow)  # a lifted rule names a module (torch.library's root is allowed anyway)
        self.attributes = {k: v for k, v in FORBIDDEN_ATTRIBUTES.items() if k not in allow}
        self.called: set[int] = set()  # ids of nodes that are the function of a call
        self.findings: list[Finding] = []
        self.aliases: dict[str, str] = {}  # local name -> module path ("np" -> "numpy")

    def add(self, node, code, why):
        self.findings.append(Finding(getattr(node, "lineno", 0), code, why))

    def _check_module(self, node, module: str):
        root = module.split(".")[0]
        if root in self.modules:
            self.add(node, f"import {module}", self.modules[root])
        elif root and root not in ALLOWED_IMPORTS and root not in self.allowed and _installed(root):
            self.add(node, f"import {module}", UNLISTED_WHY)
        for chain, why in self.attributes.items():
            if _matches(module, chain):
                self.add(node, f"import {module}", why)
        if _private_torch(module):
            self.add(node, f"import {module}", "reaches PyTorch's private internals")

    def visit_Import(self, node):
        for alias in node.names:
            self._check_module(node, alias.name)
            self.aliases[(alias.asname or alias.name).split(".")[0]] = (
                alias.name if alias.asname else alias.name.split(".")[0]
            )
        self.generic_visit(node)

    def visit_ImportFrom(self, node):
        module = node.module or ""
        if node.level:
            self.add(node, "a relative import", "imports from outside the submission file")
        self._check_module(node, module)
        for alias in node.names:
            full = f"{module}.{alias.name}" if module else alias.name
            for chain, why in self.attributes.items():
                if _matches(full, chain):
                    self.add(node, f"from {module} import {alias.name}", why)
            if alias.name in FORBIDDEN_NAMES:
                self.add(node, f"from {module} import {alias.name}", FORBIDDEN_NAMES[alias.name])
            if _private_torch(full):
                self.add(node, f"from {module} import {alias.name}", "reaches PyTorch's private internals")
            self.aliases[alias.asname or alias.name] = full
        self.generic_visit(node)

    def _resolve(self, dotted: str) -> str:
        head, _, rest = dotted.partition(".")
        base = self.aliases.get(head, head)
        return f"{base}.{rest}" if rest else base

    def visit_Attribute(self, node):
        dotted = _dotted(node)
        if dotted is not None:
            full = self._resolve(dotted)
            for chain, why in self.attributes.items():
                if _matches(full, chain):
                    self.add(node, dotted, why)
                    break
            if _private_torch(full):
                self.add(node, dotted, "reaches PyTorch's private internals")
        if node.attr in FORBIDDEN_NAMES:
            self.add(node, node.attr, FORBIDDEN_NAMES[node.attr])
        if node.attr in ("format", "format_map") and not (
            isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        ):
            # "{0.__class__}".format(x) reads attributes by the names in the string: only a string
            # written out in the source, which the scan reads, may be used as a format.
            self.add(
                node,
                f".{node.attr}",
                "formats with a string the scan cannot read (a format string reads attributes by name)",
            )
        self.generic_visit(node)

    def visit_Constant(self, node):
        if isinstance(node.value, str) and "/proc" in node.value:
            self.add(node, "/proc", "reads the process's memory or descriptors through /proc")
        if isinstance(node.value, str) and "{" in node.value:
            for name in _format_fields(node.value):
                if name.startswith("_") or name in FORBIDDEN_NAMES:
                    self.add(node, f"{{...{name}}}", "a format string that reads a private or forbidden attribute")

    # ------------------------------------------------------------------ structural pattern matching

    def visit_Match(self, node):
        self.visit(node.subject)
        subject = _dotted(node.subject)
        subject = self._resolve(subject) if subject is not None else None
        for case in node.cases:
            self._pattern(case.pattern, subject)
            if case.guard is not None:
                self.visit(case.guard)
            for stmt in case.body:
                self.visit(stmt)

    def _pattern(self, pattern, subject: str | None):
        """A pattern reads attributes of its subject: class patterns by keyword (like subject.attr) and by
        position (the attributes the class's __match_args__ names)."""
        if isinstance(pattern, ast.MatchClass):
            self.visit(pattern.cls)
            cls = pattern.cls
            if pattern.patterns and not (isinstance(cls, ast.Name) and cls.id in SELF_MATCHING):
                self.add(pattern, "a positional class pattern", "reads the attributes the class's __match_args__ names")
            for sub in pattern.patterns:
                self._pattern(sub, None)
            for attr, sub in zip(pattern.kwd_attrs, pattern.kwd_patterns):
                self._pattern_attribute(pattern, attr, subject)
                self._pattern(sub, f"{subject}.{attr}" if subject else None)
        elif isinstance(pattern, (ast.MatchAs, ast.MatchStar)):
            if getattr(pattern, "pattern", None) is not None:
                self._pattern(pattern.pattern, subject)
        elif isinstance(pattern, ast.MatchOr):
            for sub in pattern.patterns:
                self._pattern(sub, subject)
        elif isinstance(pattern, ast.MatchSequence):
            for sub in pattern.patterns:
                self._pattern(sub, None)
        elif isinstance(pattern, ast.MatchMapping):
            for key in pattern.keys:
                self.visit(key)
            for sub in pattern.patterns:
                self._pattern(sub, None)
        else:  # MatchValue, MatchSingleton
            self.generic_visit(pattern)

    def _pattern_attribute(self, node, attr: str, subject: str | None):
        """``case C(attr=...)``: the same rules as ``subject.attr``, and private names as with getattr."""
        code = f"case ...({attr}=...)"
        if attr in FORBIDDEN_NAMES:
            self.add(node, code, FORBIDDEN_NAMES[attr])
        elif attr.startswith("_"):
            self.add(node, code, "reads an attribute by a private name")
        if subject is not None:
            full = f"{subject}.{attr}"
            for chain, why in self.attributes.items():
                if _matches(full, chain):
                    self.add(node, code, why)
                    break
        elif attr in _chain_parts():
            self.add(node, code, "may read an attribute the scan forbids (the subject is not a plain name)")

    def visit_Name(self, node):
        if node.id in NAME_LOOKUPS | set(FORBIDDEN_CALLS) and id(node) not in self.called:
            self.add(node, node.id, "passes a name-lookup or code-running built-in around")
        if node.id in FORBIDDEN_NAMES:
            self.add(node, node.id, FORBIDDEN_NAMES[node.id])
        full = self.aliases.get(node.id)
        if full and full != node.id:
            for chain, why in self.attributes.items():
                if _matches(full, chain):
                    self.add(node, node.id, why)
                    break
            if _private_torch(full):
                self.add(node, node.id, "reaches PyTorch's private internals")
        self.generic_visit(node)

    def visit_FunctionDef(self, node):
        if node.name in FORBIDDEN_NAMES:
            self.add(node, f"def {node.name}", FORBIDDEN_NAMES[node.name])
        args = node.args
        for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
            if a is not None:
                self._annotation(a.annotation)
        self._annotation(node.returns)
        self.generic_visit(node)

    def _annotation(self, annotation) -> None:
        """An annotation written as a string is code to typing (get_type_hints, functools.singledispatch
        evaluate it): it is scanned as the expression it holds; one that is not an expression is refused."""
        if not (isinstance(annotation, ast.Constant) and isinstance(annotation.value, str)):
            return
        try:
            expr = ast.parse(annotation.value, mode="eval")
        except SyntaxError:
            self.add(annotation, "a string annotation", "is not an expression (typing would evaluate it)")
            return
        for sub in ast.walk(expr):  # placed on the annotation's line
            ast.copy_location(sub, annotation)
        self.visit(expr)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        if node.name in FORBIDDEN_NAMES:
            self.add(node, f"class {node.name}", FORBIDDEN_NAMES[node.name])
        for base in node.bases:
            last = (_dotted(base) or "").split(".")[-1]
            if last in LANGUAGE_CLASSES:
                # A dtype of the file's own has its to_ir called with the interpreter's builder inside a launch
                # (as a red team did).
                self.add(
                    node,
                    f"class {node.name}({last})",
                    "subclasses a class of Triton's language (its methods run inside the compiler and the interpreter)",
                )
        self.generic_visit(node)

    def visit_Global(self, node):
        for name in node.names:
            if name in FORBIDDEN_NAMES:
                self.add(node, f"global {name}", FORBIDDEN_NAMES[name])
            elif name in BUILTIN_NAMES:
                # A function that rebinds range or min in the module's globals changes what a kernel calls
                # (the interpreter runs a kernel in them, as a red team did).
                self.add(node, f"global {name}", "rebinds a built-in name that kernels call")
        self.generic_visit(node)

    def visit_Call(self, node):
        self.called.add(id(node.func))
        callee = _dotted(node.func) or ""
        if callee.split(".")[-1] == "wraps" and any(k.arg in ("assigned", "updated") for k in node.keywords):
            self.add(node, "wraps(assigned=/updated=)", "sets attributes by the names it is given (a computed setattr)")
        if isinstance(node.func, ast.Name) and node.func.id in FORBIDDEN_CALLS:
            self.add(node, f"{node.func.id}()", FORBIDDEN_CALLS[node.func.id])
        if isinstance(node.func, ast.Name) and node.func.id in NAME_LOOKUPS:
            name = node.args[1] if len(node.args) > 1 else None
            plain = (
                isinstance(name, ast.Constant)
                and isinstance(name.value, str)
                and not name.value.startswith("_")
                and name.value not in FORBIDDEN_NAMES
            )
            if not plain:
                self.add(node, f"{node.func.id}()", "reaches an attribute by a computed or private name")
            elif node.args and _dotted(node.args[0]) is not None:
                # getattr(os, "environ") is os.environ
                full = f"{self._resolve(_dotted(node.args[0]))}.{name.value}"
                for chain, why in self.attributes.items():
                    if _matches(full, chain):
                        self.add(node, f"{node.func.id}()", why)
                        break
        self.generic_visit(node)

    def _check_target(self, target, node):
        if isinstance(target, ast.Attribute) and target.attr == "value":
            self.add(
                node,
                f"{_dotted(target) or '...'} = ...",
                "changes a tl.constexpr's value (a kernel reads your file's constants as its source sets them)",
            )
        if isinstance(target, ast.Attribute) and (target.attr in LAUNCH_METHODS or target.attr.startswith("create_")):
            self.add(
                node,
                f"{_dotted(target) or '...'}.{target.attr} = ..."
                if _dotted(target) is None
                else f"{_dotted(target)} = ...",
                "replaces a method that Triton's launch calls (on an object the scan cannot name)",
            )
        if isinstance(target, ast.Attribute):
            dotted = _dotted(target)
            if dotted is not None:
                root = self._resolve(dotted).split(".")[0]
                if dotted.split(".")[0] in PROTECTED_ROOTS or root in PROTECTED_ROOTS:
                    self.add(node, f"{dotted} = ...", "replaces part of a library the judge relies on")
        elif isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                self._check_target(t, node)

    def visit_Assign(self, node):
        for target in node.targets:
            self._check_target(target, node)
        self._bind_alias(node.targets, node.value)
        self.generic_visit(node)

    def _bind_alias(self, targets, value) -> None:
        """A plain name bound to a module or a part of one (`t = torch`, `c = torch.cuda`): what is assigned
        through it is the module's (`t.manual_seed = f`). scan() visits twice, so an alias bound below its use,
        or in a function, counts too."""
        dotted = _dotted(value)
        if dotted is None or len(targets) != 1 or not isinstance(targets[0], ast.Name):
            return
        full = self._resolve(dotted)
        if full.split(".")[0] in PROTECTED_ROOTS and targets[0].id != full:
            self.aliases[targets[0].id] = full

    def visit_NamedExpr(self, node):
        self._bind_alias([node.target], node.value)
        self.generic_visit(node)

    def visit_For(self, node):
        self._check_target(node.target, node)  # for torch.manual_seed in [f]: ...
        self.generic_visit(node)

    visit_AsyncFor = visit_For

    def visit_comprehension(self, node):
        self._check_target(node.target, node.iter)
        self.generic_visit(node)

    def visit_With(self, node):
        for item in node.items:
            if item.optional_vars is not None:
                self._check_target(item.optional_vars, node)
        self.generic_visit(node)

    visit_AsyncWith = visit_With

    def visit_AugAssign(self, node):
        self._check_target(node.target, node)
        self.generic_visit(node)

    def visit_AnnAssign(self, node):
        self._check_target(node.target, node)
        self._annotation(node.annotation)
        self.generic_visit(node)

    def visit_Delete(self, node):
        for target in node.targets:
            self._check_target(target, node)
        self.generic_visit(node)


def scan(source: str, allow: tuple[str, ...] = ()) -> list[Finding]:
    """Findings in source order; empty when nothing looks like tampering. ``allow``: rules the problem lifts
    (keys of FORBIDDEN_MODULES / FORBIDDEN_ATTRIBUTES, e.g. "torch.library")."""
    scanner = _Scanner(tuple(allow))
    tree = ast.parse(source)
    scanner.visit(tree)
    scanner.visit(tree)  # again with every alias known (findings repeat; only the first of each is kept)
    seen, out = set(), []
    for f in sorted(scanner.findings, key=lambda f: (f.line, f.code)):
        if (f.line, f.code) not in seen:
            seen.add((f.line, f.code))
            out.append(f)
    return out
