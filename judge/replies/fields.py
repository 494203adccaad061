"""The field checks every parser is built of: each reads one value of a reply, bounded, or raises MalformedReply."""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType

MAX_TEXT = 4000  # an error message
MAX_NAME = 300  # a kernel, operator, type or thread name
MAX_ENTRIES = 256  # entries of a count table or a list of names
MAX_COUNT = 1 << 40
MAX_OUTPUTS = 17  # the worker describes at most 16 returned items, plus one "... more" entry
MAX_FRAMES = 16
MAX_SAMPLES = 100_000  # timed calls in one bench reply
CATEGORIES = ("compile", "memory", "runtime", "rule", "contract", "capacity")


class MalformedReply(Exception):
    """A reply that is not what the protocol allows: a forged or broken worker (RJ)."""


# --------------------------------------------------------------------------- primitives


def _need(ok: bool, what: str) -> None:
    if not ok:
        raise MalformedReply(what)


def _obj(x, what: str) -> dict:
    _need(isinstance(x, dict), f"{what} must be an object")
    return x


def _text(x, what: str, limit: int = MAX_NAME, default: str | None = None) -> str:
    """A string of the reply, bounded, and printable: a control character (an escape sequence for the
    terminal), a NUL or a lone surrogate (no UTF-8 encoder takes it: the results store, a platform's JSON
    file) becomes "?", as the report's human form shows it. A red team's exception message carried all three."""
    if x is None and default is not None:
        return default
    _need(isinstance(x, str), f"{what} must be a string")
    x = x[:limit]
    if x.isprintable():
        return x
    return "".join(ch if ch in "\n\t" or ch.isprintable() else "?" for ch in x)


def _int(x, what: str, lo: int = 0, hi: int = MAX_COUNT, default: int | None = None) -> int:
    if x is None and default is not None:
        return default
    _need(
        isinstance(x, int) and not isinstance(x, bool) and lo <= x <= hi, f"{what} must be an integer in [{lo}, {hi}]"
    )
    return x


def _opt_int(x, what: str, lo: int = -1, hi: int = MAX_COUNT) -> int | None:
    return None if x is None else _int(x, what, lo, hi)


def _float(x, what: str, default: float | None = None) -> float:
    if x is None and default is not None:
        return default
    _need(
        isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and abs(x) < 1e12,
        f"{what} must be a finite number",
    )
    return float(x)


def _bool(x, what: str) -> bool:
    if x is None:
        return False
    _need(isinstance(x, bool), f"{what} must be true or false")
    return x


def _counts(x, what: str) -> Mapping[str, int]:
    if x is None:
        return MappingProxyType({})
    _obj(x, what)
    _need(len(x) <= MAX_ENTRIES, f"{what} has more than {MAX_ENTRIES} entries")
    return MappingProxyType({_text(k, f"a key of {what}"): _int(v, f"{what}[{k[:40]!r}]") for k, v in x.items()})


def _names(x, what: str) -> tuple[str, ...]:
    if x is None:
        return ()
    _need(isinstance(x, list) and len(x) <= MAX_ENTRIES, f"{what} must be a list of at most {MAX_ENTRIES} names")
    return tuple(_text(v, f"an item of {what}") for v in x)


def _floats(x, what: str, limit: int = MAX_SAMPLES) -> tuple[float, ...]:
    if x is None:
        return ()
    _need(isinstance(x, list) and len(x) <= limit, f"{what} must be a list of at most {limit} numbers")
    return tuple(_float(v, f"an item of {what}") for v in x)


def _ints(x, what: str, limit: int = MAX_SAMPLES) -> tuple[int, ...]:
    if x is None:
        return ()
    _need(isinstance(x, list) and len(x) <= limit, f"{what} must be a list of at most {limit} integers")
    return tuple(_int(v, f"an item of {what}") for v in x)


def _bools(x, what: str, limit: int = MAX_SAMPLES) -> tuple[bool, ...]:
    if x is None:
        return ()
    _need(isinstance(x, list) and len(x) <= limit, f"{what} must be a list of at most {limit} booleans")
    return tuple(_bool(v, f"an item of {what}") for v in x)


def _kind(msg: dict, *allowed: str) -> str:
    kind = msg.get("type")
    _need(kind in allowed, f"expected a {' or '.join(allowed)} message, got {str(kind)[:40]!r}")
    return kind


def _no_tensors(msg: dict, payloads: list) -> None:
    _need(not payloads, "this message may carry no tensors")
