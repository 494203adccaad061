"""``python -m judge verify [ID ...]``: is a problem package sound? In the spirit of Kattis's verifyproblem.

For each problem directory (all of them with no ID), in order, each step one
line: problem.toml against the strict schema (judge.problem_schema), golden.py
defining its whole interface, a statement that names the entry point, a
skeleton that parses and defines it, a reference solution, and then the
corpus judged: the reference accepted and every self-test submission given
its declared verdict (judge.selftest). A step that fails is reported and the
next problem is checked; the exit code says whether all passed.

An answers problem (``kind = "answers"``) has no golden.py and no reference:
its steps are problem.toml, a statement that names every part, a
skeleton.toml with a line for every part (and nothing else), and the corpus,
judged the same way (judge.judging.judge_file).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from judge import precheck
from judge.problems import ProblemError, load_problem, problems_dir


@dataclass(frozen=True)
class Step:
    where: str  # the problem's directory name
    name: str
    ok: bool
    detail: str = ""


def problem_dirs(keys: list[str]) -> list[Path]:
    """The directories to verify: those matching KEYS (id, zero-padded id, slug or directory name), else all."""
    root = problems_dir()
    dirs = sorted(d for d in root.iterdir() if (d / "problem.toml").is_file()) if root.is_dir() else []
    if not keys:
        return dirs
    wanted = []
    for key in keys:
        k = key.strip().lower()
        match = [
            d
            for d in dirs
            if k in (d.name, d.name.partition("-")[2], d.name.partition("-")[0], d.name.partition("-")[0].lstrip("0"))
        ]
        if not match:
            raise LookupError(key)
        wanted += match
    return wanted


def static_steps(directory: Path):
    """(the loaded Problem or None, the package's steps before anything is judged)."""
    where = directory.name
    steps = []
    try:
        problem = load_problem(directory)
    except ProblemError as exc:
        return None, [Step(where, "problem.toml", False, str(exc))]
    if problem.kind == "answers":
        steps.append(Step(where, "problem.toml", True, f"answers: {len(problem.parts)} parts"))
        return problem, steps + _answers_steps(problem)
    steps.append(
        Step(where, "problem.toml", True, f"{len(problem.groups)} groups, {problem.speed_points:g} speed points")
    )
    try:
        problem.golden  # noqa: B018 - loading checks the interface
        steps.append(Step(where, "golden.py", True, ", ".join(problem.golden_interface())))
    except ProblemError as exc:
        steps.append(Step(where, "golden.py", False, str(exc)))
    except Exception as exc:  # noqa: BLE001 - a broken golden.py is the package's fault, reported as such
        steps.append(Step(where, "golden.py", False, f"{type(exc).__name__}: {exc}"))
    entry = problem.entry_point
    statement = problem.statement_path
    steps.append(
        Step(
            where,
            "statement.md",
            statement.is_file() and entry in statement.read_text(),
            "" if statement.is_file() else "missing",
        )
    )
    steps.append(_skeleton_step(where, problem.skeleton_path, entry))
    ref = problem.reference_path
    steps.append(Step(where, "reference", ref.is_file(), str(ref.name) if ref.is_file() else f"no {ref}"))
    return problem, steps


def _skeleton_step(where: str, path: Path, entry: str) -> Step:
    if not path.is_file():
        return Step(where, "skeleton.py", False, "missing")
    reason, _ = precheck.check_source(path)
    if reason:
        return Step(where, "skeleton.py", False, reason)
    defined = {n.name for n in ast.parse(path.read_text()).body if isinstance(n, ast.FunctionDef)}
    return Step(where, "skeleton.py", entry in defined, "" if entry in defined else f"does not define {entry}()")


def _answers_steps(problem) -> list[Step]:
    """An answers package: a statement naming every part; a skeleton with exactly the parts, not yet answered."""
    import math
    import tomllib

    where = problem.directory.name
    names = [p.name for p in problem.parts]
    statement = problem.statement_path
    unnamed = [n for n in names if f"`{n}`" not in statement.read_text()] if statement.is_file() else names
    steps = [
        Step(
            where,
            "statement.md",
            statement.is_file() and not unnamed,
            "missing" if not statement.is_file() else (f"does not name {', '.join(unnamed)}" if unnamed else ""),
        )
    ]
    skeleton = problem.skeleton_path
    if not skeleton.is_file():
        return steps + [Step(where, skeleton.name, False, "missing")]
    try:
        doc = tomllib.loads(skeleton.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        return steps + [Step(where, skeleton.name, False, f"not valid TOML: {exc}")]
    wrong = sorted(set(doc) ^ set(names))
    unset = [n for n in names if not (isinstance(doc.get(n), float) and math.isnan(doc[n]))]
    ok = not wrong and not unset
    detail = (
        f"keys differ from the parts: {', '.join(wrong)}"
        if wrong
        else f"the parts must be left at nan (a CE until answered): {', '.join(unset)}"
        if unset
        else ""
    )
    return steps + [Step(where, skeleton.name, ok, detail)]
