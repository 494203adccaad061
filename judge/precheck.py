"""Checks on the submission file made before any worker starts.

Reading and parsing source is not importing it: nothing here runs the
submission. A file that fails these checks gets CE with a one-line reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

MAX_BYTES = 1 << 20


def check_source(path: Path) -> tuple[str | None, int | None]:
    """(reason, line) when the file cannot be a submission, else (None, None)."""
    data = path.read_bytes()
    name = path.name
    if len(data) > MAX_BYTES:
        return f"{name} is {len(data)} bytes; submissions are limited to {MAX_BYTES} bytes (1 MiB)", None
    if not data.strip():
        return f"{name} is empty", None
    if b"\x00" in data:
        return f"{name} is a binary file, not Python source", None
    try:
        text = data.decode("utf-8-sig")  # as Python reads it: a leading byte-order mark is no character
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        return f"{name} is not valid UTF-8 text (byte {exc.start}, line {line})", line
    declared = _declared_encoding(data)
    if declared is not None:
        line = 1 if b"coding" in data.split(b"\n", 1)[0] else 2  # a cookie counts on line 1 or 2 only
        return (
            f"{name} declares the source encoding {declared}; submissions are UTF-8 and may declare no other "
            "(Python would read another text than the judge)",
            line,
        )
    try:
        ast.parse(text, filename=name)
    except SyntaxError as exc:
        return f"syntax error in {name}, line {exc.lineno}: {exc.msg}", exc.lineno
    except (RecursionError, MemoryError, ValueError) as exc:
        return f"{name} cannot be parsed: {type(exc).__name__}", None
    return None, None


def _declared_encoding(data: bytes) -> str | None:
    """The encoding a coding cookie declares when it is not UTF-8, else None.

    The judge reads every file as UTF-8 (the scan, the replay's kernels, the worker's copy of the text);
    Python's import follows the cookie. Under another codec the same bytes are another program: in UTF-7 a
    comment can hold statements (``+AAo-`` is a newline) that the scan never sees."""
    import io
    import tokenize

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:  # an unknown codec, or a cookie that contradicts a BOM
        return str(exc).rsplit(":", 1)[-1].strip() or "unknown"
    normal = encoding.lower().replace("_", "-")
    return None if normal in ("utf-8", "utf-8-sig") else encoding


# Names through which a module can gain a global without a statement that binds it (a namespace written by
# name, a module-level __getattr__, the module object replaced): a file that uses one goes to the worker.
_DYNAMIC = frozenset(
    {
        "globals",
        "locals",
        "vars",
        "setattr",
        "exec",
        "eval",
        "compile",
        "__import__",
        "__dict__",
        "__getattr__",
        "__class__",
        "modules",
        "__builtins__",
        "builtins",
        "importlib",
    }
)


def entry_point(text: str, name: str, entry: str, arity: int) -> tuple[str, str, int | None] | None:
    """(error type, reason, line) when the source cannot define a usable entry point, else None.

    Read from the syntax tree, never run, and only where the answer is certain:
    ``MissingEntryPoint`` when nothing in the file binds ``entry`` at all (no
    ``def``, class, assignment, import, ``global`` or dynamic namespace write of
    it anywhere); ``WrongArity`` when its only bindings are top-level, undecorated
    ``def`` statements and the last one cannot take ``arity`` positional
    arguments. Everything else (an entry point bound by assignment, import or
    a decorator; one defined under an ``if``) is left to the worker, which
    loads the file and checks the real object. The messages are the worker's
    (judge.untrusted.runner.load_submission).
    """
    try:
        tree = ast.parse(text, filename=name)
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        return None
    top_defs: list[ast.FunctionDef] = []
    other = False
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name in _DYNAMIC:
                other = True
            if node.name == entry:
                if isinstance(node, ast.FunctionDef) and any(node is top for top in tree.body):
                    top_defs.append(node)
                else:
                    other = True
        elif isinstance(node, ast.Name):
            if node.id in _DYNAMIC or (node.id == entry and not isinstance(node.ctx, ast.Load)):
                other = True
        elif isinstance(node, ast.Attribute):
            if node.attr in _DYNAMIC:
                other = True
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*" or (alias.asname or alias.name.split(".")[0]) == entry:
                    other = True
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            if entry in node.names:
                other = True
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)):
            if node.name == entry:
                other = True
        elif isinstance(node, ast.MatchMapping):
            if node.rest == entry:
                other = True
    expected = f"def {entry}({', '.join(f'arg{i}' for i in range(arity))})"
    if not top_defs:
        if other:
            return None
        return "MissingEntryPoint", f"{name} does not define '{entry}'; expected {expected}", None
    if other:
        return None
    fn = top_defs[-1]  # the last definition is the one the module keeps
    if fn.decorator_list:
        return None  # a decorator may return anything: the worker judges the object
    args = fn.args
    positional = len(args.posonlyargs) + len(args.args)
    required = positional - len(args.defaults)
    keyword_required = any(d is None for d in args.kw_defaults)
    if required <= arity and (arity <= positional or args.vararg is not None) and not keyword_required:
        return None
    found = f"def {entry}({ast.unparse(args)})"
    return (
        "WrongArity",
        f"'{entry}' must accept {arity} positional arguments: expected {expected}, found {found}",
        fn.lineno,
    )
