"""The strict shape of problem.toml: every key a problem may have, and what its value must be.

A misspelt key (``case_second = 5``) must not fall back to a default in
silence: an unknown key is an error that names the key, the file and the
closest known key. problems/README.md documents each key; this is the same
list as data, checked when a problem is loaded.
"""

from __future__ import annotations

import difflib

NUM = (int, float)
DOMAIN = object()  # a parameter domain: a constant, a list, or a {min, max, log} table (judge.cases)

SCHEMA = {
    "kind": str,
    "id": int,
    "slug": str,
    "title": str,
    "entry_point": str,
    "signature": str,
    "arity": int,
    "outputs": [{"name": str, "dtype": str, "scope": str}],
    # The entry point as a factory (judge.calls): "namespace" = called once per worker with a fresh secret
    # operator namespace; what it returns is the callable the cases call.
    "factory": str,
    "rules": {"allow": [str]},  # static-scan rules this problem lifts (judge.problem_schema.ALLOWABLE)
    "compile": {"backend": str, "backend_interpret": str},  # groups with call = "compile"
    "grad": {"wrt": [int], "outputs": [{"name": str, "dtype": str, "scope": str}]},  # groups with call = "grad"
    "limits": {
        "case_seconds": NUM,
        "case_seconds_interpret": NUM,
        "run_seconds": NUM,
        "run_seconds_interpret": NUM,
        "startup_seconds": NUM,
        "memory_mb": int,
        "output_kb": int,
        "processes": int,
        "gpu_memory_mb": int,
    },
    "check": {"factor": NUM, "ulps": NUM, "atol": NUM, "scope": str, "dim_names": {str: [str]}},
    "score": {"speed_points": NUM, "speed_zero_at": NUM, "speed_full_at": NUM, "speedup_clamp": NUM},
    "bench": {
        "shapes": [{str: DOMAIN}],
        "interpret_shapes": [{str: DOMAIN}],
        "budget_seconds": NUM,
        "ci_target": NUM,
        "min_rounds": int,
        "max_rounds": int,
        "request_seconds": NUM,
        "torch_baseline": bool,
    },
    "groups": [
        {
            "name": str,
            "points": NUM,
            "about": str,
            "examples": [{str: DOMAIN}],
            "max_examples": int,
            "max_examples_interpret": int,
            "params": {str: DOMAIN},
            "interpret": {str: DOMAIN},
            "call": str,
        }
    ],
}
REQUIRED = ("id", "slug", "title", "entry_point", "signature", "arity", "outputs", "groups")
SCOPES = ("element", "row", "tensor")
CALLS = ("direct", "compile", "grad")  # how a group calls the entry point (judge.calls)
FACTORIES = ("namespace",)
ALLOWABLE = ("torch.library",)  # static-scan rules a problem may lift (judge.staticscan)

# kind = "answers": the submission is a TOML file of named numbers (judge.answers); each part is checked
# against its exact value within a tolerance and earns its own points. Nothing runs: no worker, no golden.py.
ANSWERS_SCHEMA = {
    "kind": str,
    "id": int,
    "slug": str,
    "title": str,
    "score": {"speed_points": NUM},
    "parts": [
        {
            "name": str,
            "about": str,
            "value": NUM,
            "unit": str,
            "points": NUM,
            "rel_tol": NUM,
            "abs_tol": NUM,
            "hint": str,
            "mistakes": [{"values": [NUM], "ratios": [NUM], "hint": str}],
        }
    ],
}
ANSWERS_REQUIRED = ("kind", "id", "slug", "title", "parts")
PART_REQUIRED = ("name", "value", "unit", "points", "hint")
KINDS = {"kernel": (SCHEMA, REQUIRED), "answers": (ANSWERS_SCHEMA, ANSWERS_REQUIRED)}


def _type_name(kind) -> str:
    if kind is NUM:
        return "a number"
    if isinstance(kind, type):
        return {int: "an integer", str: "a string", bool: "true or false", float: "a number"}.get(kind, kind.__name__)
    return "a table" if isinstance(kind, dict) else "a list"


def check(spec: dict, where: str) -> list[str]:
    """Every problem with the spec, one line each (empty when it is well formed)."""
    kind = spec.get("kind", "kernel")
    if kind not in KINDS:
        return [f"{where}: kind must be one of {', '.join(KINDS)} (not {kind!r})"]
    schema, required = KINDS[kind]
    problems = [f"{where}: missing '{key}'" for key in required if key not in spec]
    _walk(spec, schema, where, "", problems)
    if kind == "answers":
        _check_parts(spec, where, problems)
        return problems
    for i, out in enumerate(spec.get("outputs") or []):
        if isinstance(out, dict) and out.get("scope", "row") not in SCOPES:
            problems.append(f"{where}: outputs[{i}].scope must be one of {', '.join(SCOPES)}")
    _check_calls(spec, where, problems)
    return problems


def _check_calls(spec: dict, where: str, problems: list) -> None:
    """The call modes and what they need: the keys' values that the type walk cannot judge."""
    if "factory" in spec and spec["factory"] not in FACTORIES:
        problems.append(f"{where}: factory must be one of {', '.join(FACTORIES)} (not {spec['factory']!r})")
    for rule in (spec.get("rules") or {}).get("allow") or []:
        if rule not in ALLOWABLE:
            problems.append(f"{where}: rules.allow may name {', '.join(ALLOWABLE)} (not {rule!r})")
    calls = set()
    for i, g in enumerate(spec.get("groups") or []):
        if isinstance(g, dict) and "call" in g:
            if g["call"] not in CALLS:
                problems.append(f"{where}: groups[{i}].call must be one of {', '.join(CALLS)}")
            calls.add(g["call"])
    grad = spec.get("grad")
    if "grad" in calls and not isinstance(grad, dict):
        problems.append(f'{where}: a group with call = "grad" needs a [grad] table (wrt, outputs)')
    if isinstance(grad, dict):
        wrt, outs = grad.get("wrt"), grad.get("outputs")
        arity = spec.get("arity") if isinstance(spec.get("arity"), int) else 0
        if not isinstance(wrt, list) or not wrt or any(not isinstance(a, int) or not 0 <= a < arity for a in wrt):
            problems.append(f"{where}: grad.wrt must list argument indices in [0, arity)")
        elif not isinstance(outs, list) or len(outs) != len(wrt):
            problems.append(f"{where}: grad.outputs must name one gradient per grad.wrt entry")
        for j, out in enumerate(outs or []):
            if isinstance(out, dict) and out.get("scope", "element") not in SCOPES:
                problems.append(f"{where}: grad.outputs[{j}].scope must be one of {', '.join(SCOPES)}")


def _check_parts(spec: dict, where: str, problems: list) -> None:
    """The keys of an answers problem that the type walk cannot see: required keys of each part and mistake."""
    if spec.get("score", {}).get("speed_points", 0) != 0:
        problems.append(f"{where}: 'score.speed_points' must be 0: an answers problem has no speed part")
    parts = spec.get("parts")
    if not isinstance(parts, list):
        return
    if not parts:
        problems.append(f"{where}: 'parts' must list at least one part")
    for i, part in enumerate(parts):
        if not isinstance(part, dict):
            continue
        problems += [f"{where}: missing 'parts[{i}].{key}'" for key in PART_REQUIRED if key not in part]
        for j, mistake in enumerate(part.get("mistakes") or []):
            if not isinstance(mistake, dict):
                continue
            here = f"parts[{i}].mistakes[{j}]"
            if "hint" not in mistake:
                problems.append(f"{where}: missing '{here}.hint'")
            if not mistake.get("values") and not mistake.get("ratios"):
                problems.append(f"{where}: '{here}' needs 'values' or 'ratios' (the wrong answers it explains)")


def _walk(value, schema, where: str, path: str, problems: list) -> None:
    if schema is DOMAIN:
        return
    if isinstance(schema, dict):
        if not isinstance(value, dict):
            problems.append(f"{where}: '{path}' must be a table")
            return
        keyed = str in schema  # a table of any keys (dim_names, params)
        for key, sub in value.items():
            here = f"{path}.{key}" if path else key
            if keyed:
                _walk(sub, schema[str], where, here, problems)
            elif key not in schema:
                close = difflib.get_close_matches(key, list(schema), n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else f" (known: {', '.join(schema)})"
                problems.append(f"{where}: unknown key '{here}'{hint}")
            else:
                _walk(sub, schema[key], where, here, problems)
        return
    if isinstance(schema, list):
        if not isinstance(value, list):
            problems.append(f"{where}: '{path}' must be a list")
            return
        for i, item in enumerate(value):
            _walk(item, schema[0], where, f"{path}[{i}]", problems)
        return
    ok = isinstance(value, schema) and not (isinstance(value, bool) and schema is not bool)
    if not ok:
        problems.append(f"{where}: '{path}' must be {_type_name(schema)}")
