"""Kernels that read or make addresses: found in the Triton IR the compiler makes of them, by what they do.

A pointer's value is where its memory happens to be in one process. A kernel that turns it into an integer (a
cast or a bitcast of a pointer, an inline assembly block given one) can tell the judged worker from the replay
of its launches (judge.replay), whose memory lies elsewhere: a red team compared an output's address with one
passed as an integer argument, or tested its alignment, and ran an honest body only when replayed. A kernel
that turns an integer into a pointer reaches memory no argument gave it (a host array's address passed as a
number). Neither is needed to compute an answer from a kernel's arguments, so either is refused, naming the
line: not by the names a source may use for it (``.to``, ``tl.cast``, ``bitcast=True``, a helper), but by the
operations Triton's front end emits for it, wherever they come from:

* ``tt.ptr_to_int`` and ``tt.int_to_ptr``;
* ``tt.bitcast`` between a pointer and anything but another pointer;
* ``tt.elementwise_inline_asm`` with a pointer among its operands or results.

The IR is read as text (its printed form carries each operation's source location); this module is Standard
library only, and used where the IR is made: the front end's child in the interpreter
(judge.untrusted.frontend) and the replay worker's compiled kernels on a GPU (judge.untrusted.replay).
"""

from __future__ import annotations

import re

_LOC_DEF = re.compile(r"^(#loc\d*) = loc\((.*)\)\s*$")
_LOC_REF = re.compile(r"loc\((#loc\d*)\)\s*$")
_FILE_LINE = re.compile(r'"([^"]*)":(\d+):\d+')
_ALIAS = re.compile(r"#loc\d*")
_PTR = "!tt.ptr"


def _what(line: str) -> str | None:
    """Why an IR line reads or makes an address, or None."""
    if "tt.ptr_to_int" in line:
        return "converts a pointer to an integer"
    if "tt.int_to_ptr" in line:
        return "converts an integer to a pointer"
    if re.search(r"\btt\.bitcast\b", line):
        _, _, types = line.rpartition(" : ")
        src, _, dst = types.partition(" -> ")
        if (_PTR in src) != (_PTR in dst.split(" loc(")[0]):
            return "bitcasts a pointer to or from a number"
    if "tt.elementwise_inline_asm" in line and _PTR in line.split(" loc(")[0]:
        return "gives a pointer to inline assembly"
    return None


def _lines(definitions: dict, alias: str, path: str | None, depth: int = 0) -> int | None:
    """The source line a location alias resolves to, in ``path`` when given (a call site's innermost)."""
    text = definitions.get(alias)
    if text is None or depth > 16:
        return None
    for file, line in _FILE_LINE.findall(text):
        if path is None or file == path or file.endswith("/" + path.rsplit("/", 1)[-1]):
            return int(line)
    for inner in _ALIAS.findall(text):
        found = _lines(definitions, inner, path, depth + 1)
        if found is not None:
            return found
    return None


def conversions(ir_text: str, path: str | None = None) -> list[tuple[int | None, str]]:
    """(source line or None, what) for each operation of ``ir_text`` that reads or makes an address."""
    text_lines = ir_text.splitlines()
    definitions = {}
    for line in text_lines:
        m = _LOC_DEF.match(line.strip())
        if m:
            definitions[m.group(1)] = m.group(2)
    found = []
    for line in text_lines:
        what = _what(line)
        if what is None:
            continue
        ref = _LOC_REF.search(line.strip())
        where = None
        if ref:
            where = _lines(definitions, ref.group(1), path)
        else:
            m = _FILE_LINE.search(line)
            where = int(m.group(2)) if m else None
        found.append((where, what))
    return found


class AddressRefused(Exception):
    """A compiled kernel of the file reads or makes an address (raised where it compiles, before it runs)."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.line = line


def check_compiled(kernel: str, compiled, path: str) -> None:
    """Raise AddressRefused when a compiled kernel's Triton IR (``compiled.asm["ttir"]``) reads or makes an
    address; nothing where it has none."""
    import linecache

    asm = getattr(compiled, "asm", None)
    ir_text = asm.get("ttir") if isinstance(asm, dict) else None
    if not isinstance(ir_text, str):
        return
    message = refusal(kernel, ir_text, path, lambda n: linecache.getline(path, n))
    if message is not None:
        raise AddressRefused(message, next((n for n, _ in conversions(ir_text, path) if n is not None), None))


def refusal(kernel: str, ir_text: str, path: str | None = None, source_line=None) -> str | None:
    """The message for a kernel whose IR reads or makes an address, or None. ``source_line(n)``: the text of
    line n of the file, for the message."""
    found = conversions(ir_text, path)
    if not found:
        return None
    line, what = sorted(found, key=lambda x: (x[0] is None, x[0] or 0))[0]
    where = f"line {line}" if line is not None else "a line the compiler did not name"
    code = source_line(line).strip() if (line is not None and source_line is not None) else ""
    return (
        f"the kernel {kernel} {what} ({where}{': ' + code if code else ''}): a kernel may neither read an "
        "address nor make one (addresses differ from one process to another, and an address made from a "
        "number reaches memory no argument gave the kernel)"
    )
