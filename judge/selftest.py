"""Judge a problem's own corpus and check every declared verdict (Kattis's verifyproblem).

Each file in ``submissions/<verdict>/`` must get that verdict, the reference
solution must be accepted, and an ``# expect: TEXT`` line in a file must
appear in what the report says about it, so that the intended check is the
one that fired. ``# expect-cpu:`` / ``# expect-gpu:`` lines apply only in
interpreter mode / compiled on a GPU (some checks can only fire in one).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from judge.judging import judge_file
from judge.options import Options
from judge.problems import Problem
from judge.verdicts import Verdict

EXPECT = re.compile(r"^# expect(-cpu|-gpu)?: (.+)$", re.M)
# A file whose verdict differs by where it runs says so: "# verdict-gpu: WA" (an exploit of the CPU's memory
# that on a GPU only fails to compute the answer); the folder's verdict holds elsewhere.
VERDICT = re.compile(r"^# verdict(-cpu|-gpu): ([A-Z]{2,3})\b", re.M)
# Hangs are judged with a short limit: the verdict is the same, the wait is not.
SHORT_LIMITS = {Verdict.TLE.value: {"case_seconds": 10, "case_seconds_interpret": 10, "startup_seconds": 20}}


@dataclass
class Check:
    problem: Problem
    path: Path
    expected: str
    report: dict  # the JSON report
    expect_texts: list[str]
    seconds: float

    @property
    def verdict(self) -> str:
        return self.report.get("verdict", "?")

    @property
    def message(self) -> str:
        return self.report.get("message", "")

    @property
    def text(self) -> str:
        parts = [self.message]
        for g in self.report.get("groups", []):
            failure = g.get("failure") or {}
            parts += [failure.get("message", ""), json.dumps(failure.get("details")), json.dumps(failure.get("case"))]
        return "\n".join(parts)

    @property
    def missing_text(self) -> list[str]:
        return [t for t in self.expect_texts if t not in self.text]

    @property
    def ok(self) -> bool:
        return self.verdict == self.expected and not self.missing_text


def corpus_of(problem: Problem, include_reference: bool = True) -> list[tuple[str, Path]]:
    items = [(Verdict.AC.value, problem.reference_path)] if include_reference and problem.has_reference else []
    return items + problem.corpus()


def expect_texts(path: Path, interpret: bool) -> list[str]:
    text = path.read_bytes().decode("utf-8", errors="replace")
    wanted = {None, "-cpu" if interpret else "-gpu"}
    return [m.group(2).strip() for m in EXPECT.finditer(text) if m.group(1) in wanted]


def declared_verdict(path: Path, folder: str, interpret: bool) -> str:
    """The verdict ``path`` must get: its folder's, unless a ``# verdict-cpu:`` / ``# verdict-gpu:`` line names
    another for where it runs now (the interpreter, or compiled on a GPU)."""
    text = path.read_bytes().decode("utf-8", errors="replace")
    here = "-cpu" if interpret else "-gpu"
    return next((m.group(2) for m in VERDICT.finditer(text) if m.group(1) == here), folder)


def _limits(expected: str, base: dict) -> dict:
    limits = dict(base)
    limits.update(SHORT_LIMITS.get(expected, {}))
    return limits


def judge_one(problem: Problem, expected: str, path: Path, base: Options) -> Check:
    """Judge in this process (the test suite's way)."""
    from judge.report import finite_json

    expected = declared_verdict(path, expected, base.interpret)
    options = Options(**{**base.__dict__, "limits": _limits(expected, base.limits)})
    t = time.monotonic()
    report = judge_file(problem, path, options)
    return Check(
        problem,
        path,
        expected,
        finite_json(report.to_json()),
        expect_texts(path, options.interpret),
        time.monotonic() - t,
    )


def child_workers(base: Options, jobs: int, gpu_gib: float | None = None) -> int | None:
    """The workers each of ``jobs`` files judged at once spreads its cases over: the host's share
    (judge.options.auto_workers, split between them), or None when the ``workers`` setting already says. Each child
    would otherwise take a whole host's worth: 12 on a 16-core GPU host, 96 compiling at once for
    ``selftest --jobs 8``, where a case's compiles then run past its time limit. ``gpu_gib``: the device's
    memory when known (else auto_workers asks torch)."""
    from judge.options import auto_workers
    from judge.settings import settings

    if settings().workers:
        return None
    return max(1, auto_workers(base.device, base.interpret, gpu_gib) // max(1, jobs))


def judge_via_cli(problem: Problem, expected: str, path: Path, base: Options, workers: int | None = None) -> Check:
    """Judge through ``python -m judge submit --json`` in a child process (for --jobs); ``workers``: its
    --workers (child_workers)."""
    expected = declared_verdict(path, expected, base.interpret)
    limits = _limits(expected, base.limits)
    argv = [
        sys.executable,
        "-m",
        "judge",
        "submit",
        str(problem.id),
        str(path),
        "--json",
        "--seed",
        str(base.seed),
        "--device",
        base.device,
        "--sandbox",
        base.sandbox,
    ]
    if base.interpret and base.device == "cuda":
        argv.append("--interpret")
    if not base.speed:
        argv.append("--no-speed")
    if "case_seconds" in limits:
        argv += ["--time-limit", str(limits["case_seconds_interpret" if base.interpret else "case_seconds"])]
    if "startup_seconds" in limits:
        argv += ["--startup-limit", str(limits["startup_seconds"])]
    if workers is not None:
        argv += ["--workers", str(workers)]
    from judge.pool.client import serving

    if serving():
        argv += ["--pool-socket", serving()]
    t = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True)
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        report = {
            "verdict": Verdict.IE.value,
            "message": f"no JSON report (exit {proc.returncode}): {proc.stderr[-300:]}",
        }
    return Check(problem, path, expected, report, expect_texts(path, base.interpret), time.monotonic() - t)


def run_corpus(items, base: Options, jobs: int, echo) -> int:
    """Judge (problem, expected, path) items, ``jobs`` at a time, echoing one line each; the number that mismatched."""
    from concurrent.futures import ThreadPoolExecutor

    if jobs <= 1:
        run = judge_one
    else:
        share = child_workers(base, jobs)
        run = lambda *a: judge_via_cli(*a, workers=share)  # noqa: E731
    bad = 0
    with ThreadPoolExecutor(max_workers=max(jobs, 1)) as pool:
        futures = [pool.submit(run, p, expected, path, base) for p, expected, path in items]
        for future in futures:
            check = future.result()
            bad += not check.ok
            mark = "ok " if check.ok else "BAD"
            echo(
                f"{mark} {check.problem.id} {check.expected:<4} got {check.verdict:<4} {check.seconds:5.1f}s "
                f"{check.path.parent.name}/{check.path.name}: {check.message[:160]}"
            )
            for text in check.missing_text if check.verdict == check.expected else []:
                echo(f"    expected the report to mention: {text}")
            if not check.ok and check.report.get("output"):
                tail = check.report["output"].strip().splitlines()[-12:]
                echo("    the worker printed:\n" + "\n".join(f"      {line}" for line in tail))
    return bad
