"""An exception of the submission's, described as data: its category (which decides the verdict, in the
judge), its message and the lines of the file it went through. Both workers describe failures this way
(judge.untrusted.runner, judge.untrusted.replay)."""

from __future__ import annotations

import linecache
import os
import traceback

from judge.shared.oom import device_full, with_device_view


def _frames_in(exc: BaseException, path: str) -> list[dict]:
    """The traceback frames that are in the submission file, innermost last."""
    frames = []
    seen = set()
    chain = []
    e = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        chain.append(e)
        e = e.__cause__ or e.__context__
    for e in chain:  # outermost first, so the innermost frame ends the list
        for fs in traceback.extract_tb(e.__traceback__):
            if os.path.realpath(fs.filename) == path:
                frames.append({"line": fs.lineno, "function": fs.name, "code": (fs.line or "").strip()})
    return frames[-8:]


def _innermost_file(exc: BaseException) -> str:
    tb = exc.__traceback__
    last = ""
    while tb is not None:
        last = tb.tb_frame.f_code.co_filename
        tb = tb.tb_next
    return last


GPU_ALLOWED: list = [None]  # this worker's GPU memory cap in bytes, once prepare set it (None: the device's)


def text_of(exc: BaseException) -> str:
    """An exception's message; a neutral one where its own ``__str__`` fails or returns no string (it is the
    submission's code: a red team's raised, and the worker's error handling, which printed the judge's own
    traceback as if the submission had, died with it)."""
    try:
        text = str.__str__(str(exc))
    except BaseException:  # noqa: BLE001 - whatever its __str__ raises
        text = None
    if text is None:
        return f"an exception of type {type(exc).__name__} whose message could not be shown (its __str__ failed)"
    return text


def classify(exc: BaseException, path: str) -> dict:
    """Describe an exception as data: its category decides the verdict in the judge."""
    category = "runtime"
    message = text_of(exc)
    kind = type(exc).__name__
    line = None
    root = exc
    # The interpreter wraps kernel errors in InterpreterError(repr(e)) from e.
    while kind == "InterpreterError" and root.__cause__ is not None:
        root = root.__cause__
        kind = type(root).__name__
        message = text_of(root)
    try:
        from triton.compiler.errors import CompilationError
    except Exception:  # noqa: BLE001
        CompilationError = ()  # noqa: N806
    message = with_device_view(message, GPU_ALLOWED[0])  # a CUDA error of a full device: its figures added
    from judge.untrusted.addresses import AddressRefused

    if isinstance(root, AddressRefused):  # a compiled kernel of the file reads or makes an address
        category = "rule"
        line = root.line
    elif isinstance(root, PermissionError) and str(getattr(root, "filename", "") or "").startswith("/proc/"):
        # What the worker's lockdown refuses (judge.untrusted.lockdown), or another process's files: a rule.
        category = "rule"
        message = (
            f"access to {root.filename} was refused: a submission may not write beneath /proc (its own "
            "memory included: /proc/self/mem) nor read other processes' files there"
        )
    elif device_full(message):  # not this worker's use, by its own account (judge.shared.oom, judge.rules)
        category = "capacity"
    elif isinstance(root, MemoryError) or "out of memory" in message.lower() or "can't allocate memory" in message:
        category = "memory"
    elif CompilationError and isinstance(root, CompilationError):
        category = "compile"
        line = _compile_error_line(root)
        message = getattr(root, "error_message", None) or message.splitlines()[-1]
    elif root is not exc or kind in ("ValueError", "TypeError", "AssertionError", "AttributeError", "NameError"):
        # In the interpreter, Triton's semantic checks (what the GPU compiler
        # would reject) raise from triton/language; call those compile errors.
        inner = _innermost_file(root)
        if f"{os.sep}triton{os.sep}language{os.sep}" in inner:
            category = "compile"
    cuda_fatal = "CUDA error" in message or "illegal memory access" in message or "device-side assert" in message
    frames = _frames_in(exc, path)
    if line is None and frames:
        line = frames[-1]["line"]
    code = linecache.getline(path, line).strip() if line else ""
    return {
        "category": category,
        "type": kind,
        "message": message[:4000],
        "line": line,
        "code": code[:300],
        "frames": frames,
        "fatal": bool(cuda_fatal),
    }


def _compile_error_line(err) -> int | None:
    node = getattr(err, "node", None)
    lineno = getattr(node, "lineno", None)
    if lineno is None:
        return None
    base = getattr(err, "_judge_def_line", None)
    return lineno if base is None else base + lineno - 1
