"""Test cases: drawn with Hypothesis from a group's parameter domain, built into tensors.

A case is a flat dict of parameters (sizes, dtype, layout, scale, ...) plus a
``seed`` for the data. It is small, printable and replayable: the report's
reproduce command passes it back verbatim with ``--case``.

Domain syntax in problem.toml (per parameter):

* a constant (``scale = 1.0``) - always that value;
* a list (``dtype = ["float32", "float16"]``) - one of them; shrinks to the first;
* ``{min = 1, max = 4096}`` - an integer range; shrinks towards ``min``;
* ``{min = 1e-8, max = 1e-2, log = true}`` - a float range, log-uniform if ``log``.
"""

from __future__ import annotations

import hashlib
import json
import math

from hypothesis import strategies as st

SEED_MAX = (1 << 32) - 1


def canonical(params: dict) -> str:
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


def derive_seed(*parts) -> int:
    digest = hashlib.sha256("\x00".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:4], "big")


def _domain_strategy(spec):
    if isinstance(spec, list):
        if not spec:
            raise ValueError("an empty list is not a domain")
        return st.sampled_from(spec)
    if isinstance(spec, dict):
        lo, hi = spec["min"], spec["max"]
        if isinstance(lo, int) and isinstance(hi, int) and not spec.get("log"):
            return st.integers(lo, hi)
        lo, hi = float(lo), float(hi)
        if spec.get("log"):
            return st.floats(math.log(lo), math.log(hi)).map(lambda v: min(max(math.exp(v), lo), hi))
        return st.floats(lo, hi, allow_nan=False, allow_infinity=False)
    return st.just(spec)


def _domain_default(spec):
    if isinstance(spec, list):
        return spec[0]
    if isinstance(spec, dict):
        return spec["min"]
    return spec


def _in_domain(value, spec) -> bool:
    if isinstance(spec, list):
        return value in spec
    if isinstance(spec, dict):
        return isinstance(value, (int, float)) and not isinstance(value, bool) and spec["min"] <= value <= spec["max"]
    return value == spec


def allowed_dtypes(domain: dict, interpret: bool) -> list:
    """The dtypes of a domain that this mode can judge (the interpreter skips bfloat16)."""
    spec = domain.get("dtype")
    values = spec if isinstance(spec, list) else [spec] if spec is not None else []
    if interpret:
        values = [v for v in values if v != "bfloat16"]
    return values


def params_strategy(domain: dict, interpret: bool):
    parts = {}
    for key, spec in domain.items():
        if key == "dtype":
            spec = allowed_dtypes(domain, interpret)
        parts[key] = _domain_strategy(spec)
    parts["seed"] = st.integers(0, SEED_MAX)
    return st.fixed_dictionaries(parts)


def expand_examples(examples, domain: dict, interpret: bool, salt: str) -> list[dict]:
    """Explicit edge examples, completed with defaults and run once per dtype."""
    out = []
    dtypes = allowed_dtypes(domain, interpret)
    for i, partial in enumerate(examples):
        base = {k: _domain_default(v) for k, v in domain.items()}
        base.update(partial)
        if any(not _in_domain(base[k], spec) for k, spec in domain.items() if k != "dtype"):
            continue  # e.g. a GPU-sized example in interpreter mode
        choices = [base["dtype"]] if "dtype" in partial else dtypes
        for dtype in choices:
            if dtype not in dtypes and "dtype" in domain:
                continue
            case = dict(base)
            if "dtype" in domain:
                case["dtype"] = dtype
            case.setdefault("seed", derive_seed(salt, i, dtype))
            out.append(case)
    return out


def validate_case(params: dict, domain: dict) -> str | None:
    """Why a user-supplied case (``--case``) is outside the group's domain, or None."""
    for key in domain:
        if key not in params:
            return f"the case lacks '{key}'"
    for key, value in params.items():
        if key == "seed":
            if not isinstance(value, int) or not 0 <= value <= SEED_MAX:
                return "'seed' must be an integer in [0, 2**32)"
            continue
        if key not in domain:
            return f"unknown parameter '{key}'"
        spec = domain[key]
        if isinstance(spec, dict) and isinstance(value, (int, float)):
            continue  # ranges may be widened to reproduce a case by hand
        if not _in_domain(value, spec):
            return f"'{key}'={value!r} is outside {spec!r}"
    return None
