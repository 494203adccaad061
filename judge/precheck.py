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
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        return f"{name} is not valid UTF-8 text (byte {exc.start}, line {line})", line
    try:
        ast.parse(text, filename=name)
    except SyntaxError as exc:
        return f"syntax error in {name}, line {exc.lineno}: {exc.msg}", exc.lineno
    except (RecursionError, MemoryError, ValueError) as exc:
        return f"{name} cannot be parsed: {type(exc).__name__}", None
    return None, None
