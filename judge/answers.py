"""Judging an answers problem: a TOML file of named numbers, checked part by part. Nothing runs.

The submission is data: it is read (bounded in size), decoded as UTF-8 and
parsed with tomllib, never imported or executed, so there is no worker, no
sandbox and no GPU. Each part of the problem (problem.toml ``[[parts]]``) is
a group of the report: AC and its points when the answer is within the
part's tolerance of the exact value, else WA with a hint, the one of a known
mistake when the answer matches it (``[[parts.mistakes]]``), else the part's
general hint. The expected value is never shown.

CE, with a one-line reason naming the line or key: a file that is empty,
binary, not UTF-8, too large or not valid TOML; a part missing; a key that
is no part (a misspelling, or a [table]); a value that is not a finite number
(a string, a boolean, a list, a date, nan or inf).
"""

from __future__ import annotations

import difflib
import hashlib
import math
import re
import time
import tomllib
from pathlib import Path

from judge.verdicts import GroupResult, Report, Verdict, worst

MAX_BYTES = 64 << 10  # a file of a few named numbers; far more is not an answer file
NO_SPEED = "an answers problem has no speed part"


class Malformed(Exception):
    """The file cannot be judged: CE with this one-line reason."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.line = line


def read_answers(path: Path, names: list[str]) -> dict[str, float]:
    """The answers of the file at PATH for the parts NAMES, as floats; Malformed when the file is not one."""
    data = path.read_bytes()
    name = path.name
    if len(data) > MAX_BYTES:
        raise Malformed(f"{name} is {len(data)} bytes; an answers file is limited to {MAX_BYTES} bytes")
    if not data.strip():
        raise Malformed(f"{name} is empty; write one line `name = number` per part ({', '.join(names)})")
    if b"\x00" in data:
        raise Malformed(f"{name} is a binary file, not a TOML file of answers")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise Malformed(f"{name} is not valid UTF-8 text (byte {exc.start}, line {line})", line) from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"line (\d+)", str(exc))
        raise Malformed(f"{name} is not valid TOML: {exc}", int(found.group(1)) if found else None) from None
    except (RecursionError, MemoryError, ValueError) as exc:
        raise Malformed(f"{name} cannot be parsed: {type(exc).__name__}") from None
    for key in doc:
        if key not in names:
            close = difflib.get_close_matches(key, names, n=1)
            what = "table" if isinstance(doc[key], dict) else "key"
            hint = f"did you mean '{close[0]}'?" if close else f"the parts are {', '.join(names)}"
            line = _line_of(text, key)
            raise Malformed(f"unknown {what} '{_short(key)}'{_at(line)}: {hint}", line)
    answers = {}
    for key in names:
        if key not in doc:
            raise Malformed(f"missing the answer '{key}': write `{key} = <number>` (the parts are {', '.join(names)})")
        value = doc[key]
        line = _line_of(text, key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            shown = (
                f" ({str(value).lower()})"
                if isinstance(value, bool)
                else f" ({_short(repr(value))})"
                if isinstance(value, str)
                else ""
            )
            raise Malformed(
                f"'{key}'{_at(line)} must be a number, not {_kind(value)}{shown}"
                + (": write it without quotes" if isinstance(value, str) else ""),
                line,
            )
        try:
            value = float(value)
        except OverflowError:
            raise Malformed(f"'{key}'{_at(line)} is too large for a number", line) from None
        if not math.isfinite(value):
            raise Malformed(
                f"'{key}'{_at(line)} must be a finite number, not {value}"
                + (" (the skeleton's placeholder: replace it with your answer)" if math.isnan(value) else ""),
                line,
            )
        answers[key] = value
    return answers


def _kind(value) -> str:
    return {str: "a string", bool: "a boolean", list: "a list", dict: "a table"}.get(type(value), "a date or time")


def _short(text: str, limit: int = 40) -> str:
    """Text from the student's file, for a one-line reason: printable and bounded."""
    text = "".join(ch if ch.isprintable() else "?" for ch in text)
    return text if len(text) <= limit else text[:limit] + "..."


def _at(line: int | None) -> str:
    return f" (line {line})" if line else ""


def _line_of(text: str, key: str) -> int | None:
    """The line where KEY is assigned or opens a table (bare or quoted), for the reason's pointer."""
    k = re.escape(key)
    pattern = re.compile(rf'^[ \t]*(\[+[ \t]*)?(?:{k}|"{k}"|\'{k}\')[ \t]*(=|\]|\.)', re.M)
    found = pattern.search(text)
    return text.count("\n", 0, found.start()) + 1 if found else None


def judge_answers(problem, path: Path, options) -> Report:
    """The report of the answers file at PATH for PROBLEM (kind "answers"); OPTIONS.group limits it to one part."""
    started = time.monotonic()
    path = Path(path)
    parts = [p for p in problem.parts if options.group in (None, p.name)]
    try:
        answers = read_answers(path, [p.name for p in problem.parts])
    except Malformed as exc:
        message = str(exc)
        groups = [
            GroupResult(p.name, p.about, p.points, False, 0, Verdict.CE, skipped="not judged: " + message)
            for p in parts
        ]
        details = {"line": exc.line} if exc.line else {}
        return _report(problem, path, options, Verdict.CE, message, groups, details, started)
    groups = [_judge_part(part, answers[part.name]) for part in parts]
    verdict = worst(g.verdict for g in groups)
    message = next((f"{g.name}: {g.message}" for g in groups if not g.passed), "every answer is right")
    return _report(problem, path, options, verdict, message, groups, {}, started)


def _judge_part(part, got: float) -> GroupResult:
    if part.accepts(got):
        return GroupResult(part.name, part.about, part.points, True, 1)
    hint, known = part.hint_for(got)
    unit = f" {part.unit}" if part.unit else ""
    return GroupResult(
        part.name,
        part.about,
        part.points,
        False,
        1,
        Verdict.WA,
        message=f"{got:.10g}{unit} is wrong ({part.tolerance_text()})",
        details={
            "answer": got,
            "unit": part.unit,
            "tolerance": part.tolerance_text(),
            "hint": hint,
            "known_mistake": known,
        },
    )


def _report(
    problem,
    path: Path,
    options,
    verdict: Verdict,
    message: str,
    groups: list[GroupResult],
    details: dict,
    started: float,
) -> Report:
    data = path.read_bytes() if path.is_file() else b""
    return Report(
        problem={"id": problem.id, "slug": problem.slug, "title": problem.title},
        submission={"path": str(path), "sha256": hashlib.sha256(data).hexdigest()},
        mode={"device": "none", "interpret": False, "sandbox": "none", "quick": bool(options.quick), "kind": "answers"},
        seed=options.seed,
        verdict=verdict,
        message=message,
        groups=groups,
        notes=[],
        max_score=100.0,
        speed={"scored": False, "points": 0, "max_points": 0, "reason": NO_SPEED},
        elapsed_seconds=time.monotonic() - started,
        details=details,
    )
