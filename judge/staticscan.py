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

# The modules a submission may import (each with its submodules, less what the lists below forbid): Triton,
# PyTorch, and the parts of the standard library a host function might use. Anything else that is installed
# is refused: a red team of 2026-12-03 reached ctypes through yaml.unsafe_load("!!python/name:...") (any
# loader that resolves names in data is such a door: pickle's kin, pydoc, logging.config, jinja2, sympy's
# eval), so a list of doors to close is never done. A module that is not installed is left to the import,
# which fails (CE, "cannot import module"): the scan never turns a typo into RJ.
ALLOWED_IMPORTS = frozenset({
    "torch", "triton", "math", "cmath", "numbers", "typing", "typing_extensions", "__future__", "functools",
    "itertools", "dataclasses", "enum", "collections", "abc", "contextlib", "random", "warnings", "copy",
    "heapq", "bisect", "fractions", "decimal", "statistics", "os", "sys", "time", "struct", "io", "json", "re",
    "string", "array", "faulthandler", "textwrap",
})
UNLISTED_WHY = "a kernel exercise imports only Triton, PyTorch and a few standard modules (math, functools, ...)"

# module -> why importing it is a rule violation in a kernel exercise
FORBIDDEN_MODULES = {
    "ctypes": "loads native code and pokes at memory",
    "cffi": "loads native code",
    "subprocess": "starts other programs",
    "multiprocessing": "starts other processes",
    "threading": "starts threads (work can hide from the judge there)",
    "_thread": "starts threads",
    "concurrent": "starts threads or processes",
    "socket": "opens network connections",
    "gc": "walks the interpreter's objects",
    "inspect": "inspects the call stack and the judge's frames",
    "importlib": "imports modules by computed names",
    "builtins": "replaces built-in functions",
    "judge": "reaches into the judge's worker",
    "pickle": "runs code hidden in data",
    "marshal": "loads code objects",
    "signal": "changes how the worker is stopped",
    "resource": "changes the worker's limits",
    "mmap": "maps memory directly",
    "numpy": "computes outside your kernels (NumPy)",
    "posix": "reaches the operating system below os",
    "_posixsubprocess": "starts other programs",
    "code": "runs generated code",
    "codeop": "compiles generated code",
    "types": "builds functions and code objects",
    "operator": "reaches attributes by computed names",
    "pydoc": "reaches attributes by computed names (pydoc.locate)",
    "pkgutil": "imports modules by computed names",
    "runpy": "runs other code",
    "copyreg": "runs code hidden in data",
    "unittest": "patches objects by computed names",
    "timeit": "runs generated code",
    "doctest": "runs generated code (its examples)",
    "linecache": "plants source text for generated code",
    "asyncio": "starts threads and processes",
}
# Attribute chains (as written in the source) that are tampering.
FORBIDDEN_ATTRIBUTES = {
    "sys._getframe": "walks the call stack",
    "sys.modules": "swaps modules",
    "sys.settrace": "traces the judge's code",
    "sys.setprofile": "traces the judge's code",
    "sys.path": "changes where modules are imported from (code the scan never read)",
    "sys.meta_path": "changes how modules are imported (code the scan never read)",
    "sys.path_hooks": "changes how modules are imported (code the scan never read)",
    "sys.path_importer_cache": "changes how modules are imported (code the scan never read)",
    "torch.package": "loads code from data (code the scan never read)",
    "torch.hub": "loads code from files (code the scan never read)",
    "torch.jit": "compiles and loads code apart from your kernels",
    "triton.runtime.interpreter": "reaches the interpreter's machinery (memory at any address, a kernel's hooks)",
    "os.environ": "reads the environment",
    "os.getenv": "reads the environment",
    "os.putenv": "changes the environment",
    "os.system": "runs shell commands",
    "os.popen": "runs shell commands",
    "os.fork": "starts processes",
    "os.forkpty": "starts processes",
    "os.kill": "signals processes",
    "os.killpg": "signals processes",
    "os.write": "writes raw file descriptors (the judge's channel)",
    "os.dup": "duplicates file descriptors",
    "os.dup2": "duplicates file descriptors",
    "os.execv": "replaces the process",
    "os.execve": "replaces the process",
    "os.execl": "replaces the process",
    "os.execle": "replaces the process",
    "os.execlp": "replaces the process",
    "os.execlpe": "replaces the process",
    "os.execvp": "replaces the process",
    "os.execvpe": "replaces the process",
    "os.spawnl": "starts processes",
    "os.spawnle": "starts processes",
    "os.spawnlp": "starts processes",
    "os.spawnlpe": "starts processes",
    "os.spawnve": "starts processes",
    "os.spawnvp": "starts processes",
    "os.spawnvpe": "starts processes",
    "os.posix_spawnp": "starts processes",
    "os.spawnv": "starts processes",
    "os.posix_spawn": "starts processes",
    "torch._C": "reaches below PyTorch's public API",
    "torch.utils._python_dispatch": "meddles with PyTorch's dispatcher",
    "torch._dynamo": "meddles with PyTorch's compiler",
    "torch.Tensor._make_subclass": "makes lazy tensor subclasses",
    "torch.cuda.Stream": "runs work on a side stream the timer may not see",
    "torch.cuda.stream": "runs work on a side stream the timer may not see",
    "torch.cuda.CUDAGraph": "replays captured work",
    "torch.cuda.graph": "replays captured work",
    "torch.cuda.set_sync_debug_mode": "changes global CUDA state",
    "torch.set_float32_matmul_precision": "changes global precision settings",
    "torch.use_deterministic_algorithms": "changes global settings the judge relies on",
    "torch.backends": "changes global precision settings",
    "torch.utils.deterministic": "changes global settings the judge relies on",
    "torch.library": "defines operators the judge would take for PyTorch's own",
    "torch.multiprocessing": "starts other processes",
    "torch.ops.load_library": "loads native code",
    "torch.utils.cpp_extension": "builds native code",
    "torch.from_numpy": "computes outside your kernels (NumPy)",
    # PyTorch's dispatch under public names: each switches the judge's operator watch off.
    "torch.ExcludeDispatchKeyGuard": "switches PyTorch's dispatch (and the judge's operator watch) off",
    "torch.DispatchKeySet": "switches PyTorch's dispatch (and the judge's operator watch) off",
    "torch.DispatchKey": "switches PyTorch's dispatch (and the judge's operator watch) off",
    "torch.fx": "meddles with PyTorch's dispatcher",
    "torch.overrides": "meddles with PyTorch's dispatcher",
    "torch.profiler": "meddles with the judge's operator record",
    "torch.autograd.profiler": "meddles with the judge's operator record",
    "torch.ops.profiler": "meddles with the judge's operator record",
    "torch.cuda.set_per_process_memory_fraction": "changes the worker's GPU memory limit",
    "string.Formatter": "reads attributes named in a format string",
    "torch.save": "serializes tensors (their bytes leave PyTorch: computes outside your kernels)",
    "torch.load": "serializes tensors (their bytes leave PyTorch: computes outside your kernels)",
    "torch.serialization": "serializes tensors (their bytes leave PyTorch: computes outside your kernels)",
    "torch.set_printoptions": "changes global settings (how tensors print)",
}
FORBIDDEN_CALLS = {
    "exec": "runs generated code",
    "eval": "runs generated code",
    "compile": "compiles generated code",
    "__import__": "imports modules by computed names",
    "globals": "reaches into module globals",
    "vars": "reaches into object internals",
    "setattr": "changes attributes by name",
    "delattr": "removes attributes by name",
    "breakpoint": "stops the worker",
    "locals": "reaches into frame internals",
}
# getattr(x, name) is fine with a plain public name written out; a computed or
# private name is how the rest of this list is dodged ("_" + "C").
NAME_LOOKUPS = {"getattr", "hasattr"}
import builtins as _builtins

# Methods that Triton's launch and its interpreter call on objects a file can reach without naming them (a
# dtype's to_ir, the builder's create_*, the jit module's mangle_type, a tensor's data_ptr): assigned as an
# attribute anywhere (`def put(m, f): m.to_ir = f`), they are refused by name (red team of 2026-12-04).
_LAUNCH_METHODS = frozenset({
    "to_ir", "mangle_type", "specialize_impl", "native_specialize_impl", "data_ptr", "untyped_storage",
    "getcallargs", "getfullargspec", "set_grid_idx", "set_grid_dim", "get_int1_ty", "get_int32_ty",
    "_patch_lang", "_init_args_hst", "_restore_args_dev", "unwrap_tensor", "_unwrap_tensor", "_rewrap_tensor",
})
_LANGUAGE_CLASSES = frozenset({"dtype", "base_type", "pointer_type", "block_type", "tensor", "constexpr",
                               "InterpreterBuilder", "TritonSemantic", "tuple_type", "TensorHandle"})

_BUILTIN_NAMES = frozenset(n for n in dir(_builtins) if not n.startswith("_"))

FORBIDDEN_NAMES = {
    "__torch_function__": "defines a tensor subclass that intercepts PyTorch",
    "__torch_dispatch__": "defines a tensor subclass that intercepts PyTorch",
    "__builtins__": "reaches the built-ins",
    "__subclasses__": "walks the class hierarchy",
    "__globals__": "reaches into function globals",
    "__code__": "rewrites code objects",
    "__self__": "reaches the module or object behind a built-in (e.g. builtins from print)",
    "__dict__": "reaches into object internals",
    "__class__": "walks the class hierarchy",
    "__mro__": "walks the class hierarchy",
    "__bases__": "walks the class hierarchy",
    "__base__": "walks the class hierarchy",
    "__getattribute__": "reaches attributes by computed names",
    "__closure__": "reaches into function internals",
    "__func__": "reaches into method internals",
    "__wrapped__": "unwraps functions the judge wrapped",
    "__import__": "imports modules by computed names",
    "__loader__": "reaches the import machinery",
    "__spec__": "reaches the import machinery",
    "__reduce__": "runs code hidden in data",
    "__setattr__": "changes attributes by name",
    "__delattr__": "removes attributes by name",
    "__annotations__": "holds annotations that typing evaluates as code",
    "get_type_hints": "evaluates annotations as code",
    "update_wrapper": "sets attributes by the names it is given (a computed setattr)",
    "ForwardRef": "evaluates a string as code",
    "__reduce_ex__": "runs code hidden in data",
    "f_back": "walks the call stack",
    "f_globals": "walks the call stack",
    "f_locals": "walks the call stack",
    "gi_frame": "walks the call stack",
    "tb_frame": "walks the call stack",
    "numpy": "computes outside your kernels (NumPy)",
    "np": "computes outside your kernels (NumPy)",
    "tolist": "computes outside your kernels (Python lists)",
    "__array__": "computes outside your kernels (NumPy)",
    "__array_interface__": "computes outside your kernels (NumPy)",
    "__cuda_array_interface__": "hands the memory to other libraries",
    "__dlpack__": "hands the memory to other libraries",
    "from_dlpack": "hands the memory to other libraries",
    "cr_frame": "walks the call stack",
    "ag_frame": "walks the call stack",
    "__getattr__": "reaches attributes by computed names",
    "__match_args__": "reads the attributes a class pattern names",
    "attrgetter": "reaches attributes by computed names",
    "methodcaller": "reaches methods by computed names",
    "import_module": "imports modules by computed names",
    "resolve_name": "imports modules by computed names",
    "get_field": "reads attributes named in a format string",
    "vformat": "reads attributes named in a format string",
    "record_function": "forges entries in the judge's operator record",
    "map_": "runs a Python function per element (computes outside your kernels)",
    "map2_": "runs a Python function per element (computes outside your kernels)",
    "apply_": "runs a Python function per element (computes outside your kernels)",
    "frombuffer": "makes tensors of Python bytes (computes outside your kernels)",
    # ctypes is forbidden as an import, but other modules hold it as an attribute
    # (triton.backends.amd.compiler.ctypes): the name is refused wherever it is written.
    **dict.fromkeys(("ctypes", "_ctypes", "cffi", "CDLL", "PyDLL", "pythonapi", "from_address", "dlopen"),
                    "loads native code and pokes at memory"),
    # A tensor's raw storage, and its file-writing and file-reading methods: its bytes without any operator.
    **dict.fromkeys(("untyped_storage", "_typed_storage", "_untyped_storage", "_write_file", "_set_from_file",
                     "_new_with_file"), "reads or writes a tensor's raw bytes (computes outside your kernels)"),
    # The interpreter's rewrite of a kernel calls back through these names, taken from the kernel's globals
    # (a file's own object under one runs inside its kernels); TensorHandle and the builder reach any address.
    **dict.fromkeys(("interpreter_semantic", "_InterpreterComparison", "interpreter_builder", "TensorHandle",
                     "InterpreterBuilder", "InterpretedFunction", "FunctionRewriter",
                     # the interpreter's own globals, which its rewrite copies into the file's module at a
                     # kernel's first launch (_interpreter: its load and store; red team of 2026-12-04)
                     "_interpreter", "GridExecutor", "_patch_lang", "_patch_builtin", "_patch_attr",
                     "_LangPatchScope", "_implicit_cvt", "_patch_lang_core", "_patch_lang_tensor"),
                    "reaches Triton's interpreter machinery (a kernel's hooks, memory at any address)"),
    # The built-in functions' module under another module's attribute (dataclasses.builtins): a kernel's
    # range or min falls through to it (red team of 2026-12-04).
    "builtins": "reaches the built-in functions (which a kernel calls)",
    # An interpreted kernel runs the code its rewriter made; swapping it runs another body than the source's.
    "rewriter": "rewires what a kernel runs",
    "rewritten_fn": "rewires what a kernel runs",
    "from_file": "maps files into tensors (computes outside your kernels)",
    # PyTorch's dispatch guard and its relatives, under any name or path they are re-exported by.
    **dict.fromkeys((
        "_C", "redispatch", "ExcludeDispatchKeyGuard", "DispatchKeySet", "DispatchKey", "TorchDispatchMode",
        "TorchFunctionMode", "no_dispatch", "enable_python_dispatcher", "disable_proxy_modes_tracing",
        "_DisableTorchDispatch", "_DisablePythonDispatcher", "_EnablePythonDispatcher", "_disable_current_modes",
        "_pop_mode", "_pop_mode_temporarily", "_push_mode", "_set_torch_dispatch_mode", "_len_torch_dispatch_stack",
        "_disable_infra_mode", "_unset_infra_mode", "_python_dispatch", "_mode_utils", "_subclasses", "_dispatch",
    ), "switches PyTorch's dispatch (and the judge's operator watch) off"),
}
# Torch modules and attributes whose name starts with "_" are PyTorch's internals
# (torch._C, torch.utils._python_dispatch, torch._subclasses, ...): many of them
# hold the dispatch guard under yet another name. A submission needs none.
PRIVATE_ROOTS = {"torch"}
# Classes that match a positional pattern against the subject itself (PEP 634);
# any other class reads the attributes its __match_args__ names.
SELF_MATCHING = {"bool", "bytearray", "bytes", "dict", "float", "frozenset", "int", "list", "set", "str", "tuple"}
# The non-root parts of every forbidden chain: a class pattern on an unknown
# subject that reads one of these (case object(environ=e)) may be reading it.
_CHAIN_PARTS = None
# Assigning to an attribute of these modules (torch.cuda.synchronize = ...)
# swaps out the judge's own tools or the clock.
PROTECTED_ROOTS = {"torch", "triton", "tl", "time", "os", "sys", "math", "numpy", "np", "json", "struct"}


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
    return any(parts[i:i + len(want)] == want for i in range(len(parts) - len(want) + 1))


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
            self.aliases[(alias.asname or alias.name).split(".")[0]] = alias.name if alias.asname else \
                alias.name.split(".")[0]
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
        if node.attr in ("format", "format_map") and not (isinstance(node.value, ast.Constant)
                                                          and isinstance(node.value.value, str)):
            # "{0.__class__}".format(x) reads attributes by the names in the string: only a string
            # written out in the source, which the scan reads, may be used as a format.
            self.add(node, f".{node.attr}", "formats with a string the scan cannot read (a format string reads "
                                            "attributes by name)")
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
                self.add(pattern, "a positional class pattern",
                         "reads the attributes the class's __match_args__ names")
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
            if last in _LANGUAGE_CLASSES:
                # A dtype of the file's own has its to_ir called with the interpreter's builder inside a launch
                # (red team of 2026-12-04, third pass).
                self.add(node, f"class {node.name}({last})", "subclasses a class of Triton's language (its "
                                                             "methods run inside the compiler and the interpreter)")
        self.generic_visit(node)

    def visit_Global(self, node):
        for name in node.names:
            if name in FORBIDDEN_NAMES:
                self.add(node, f"global {name}", FORBIDDEN_NAMES[name])
            elif name in _BUILTIN_NAMES:
                # A function that rebinds range or min in the module's globals changes what a kernel calls
                # (the interpreter runs a kernel in them; red team of 2026-12-04).
                self.add(node, f"global {name}", "rebinds a built-in name that kernels call")
        self.generic_visit(node)

    def visit_Call(self, node):
        self.called.add(id(node.func))
        callee = _dotted(node.func) or ""
        if callee.split(".")[-1] == "wraps" and any(k.arg in ("assigned", "updated") for k in node.keywords):
            self.add(node, "wraps(assigned=/updated=)", "sets attributes by the names it is given (a computed "
                                                        "setattr)")
        if isinstance(node.func, ast.Name) and node.func.id in FORBIDDEN_CALLS:
            self.add(node, f"{node.func.id}()", FORBIDDEN_CALLS[node.func.id])
        if isinstance(node.func, ast.Name) and node.func.id in NAME_LOOKUPS:
            name = node.args[1] if len(node.args) > 1 else None
            plain = isinstance(name, ast.Constant) and isinstance(name.value, str) and \
                not name.value.startswith("_") and name.value not in FORBIDDEN_NAMES
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
            self.add(node, f"{_dotted(target) or '...'} = ...", "changes a tl.constexpr's value (a kernel reads "
                                                                  "your file's constants as its source sets them)")
        if isinstance(target, ast.Attribute) and (target.attr in _LAUNCH_METHODS or target.attr.startswith("create_")):
            self.add(node, f"{_dotted(target) or '...'}.{target.attr} = ..."
                     if _dotted(target) is None else f"{_dotted(target)} = ...",
                     "replaces a method that Triton's launch calls (on an object the scan cannot name)")
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
