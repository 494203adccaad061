"""Judge a problem's own corpus and check every declared verdict (Kattis's verifyproblem).

Each file in ``submissions/<verdict>/`` must get that verdict, the reference
solution must be accepted, and a ``# expect: TEXT`` line in a file must appear
in what the report says about it, so the intended check is the one that fired.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

from judge.problems import Problem
from judge.session import Options, Session
from judge.verdicts import Report

EXPECT = re.compile(r"^# expect: (.+)$", re.M)
# Hangs are judged with a short limit: the verdict is the same, the wait is not.
SHORT_LIMITS = {"TLE": {"case_seconds": 10, "case_seconds_interpret": 10, "startup_seconds": 20}}


@dataclass
class Check:
    path: Path
    expected: str
    report: Report
    expect_text: str | None
    seconds: float

    @property
    def text(self) -> str:
        parts = [self.report.message]
        for g in self.report.groups:
            parts += [g.message, json.dumps(g.details), json.dumps(g.case)]
        return "\n".join(parts)

    @property
    def ok(self) -> bool:
        if self.report.verdict.value != self.expected:
            return False
        return self.expect_text is None or self.expect_text in self.text


def corpus_of(problem: Problem, include_reference: bool = True) -> list[tuple[str, Path]]:
    items = [("AC", problem.reference_path)] if include_reference else []
    return items + problem.corpus()


def expect_text(path: Path) -> str | None:
    m = EXPECT.search(path.read_bytes().decode("utf-8", errors="replace"))
    return m.group(1).strip() if m else None


def judge_one(problem: Problem, expected: str, path: Path, base: Options) -> Check:
    limits = dict(base.limits)
    limits.update(SHORT_LIMITS.get(expected, {}))
    options = Options(**{**base.__dict__, "limits": limits})
    t = time.monotonic()
    report = Session(problem, path, options).run()
    return Check(path, expected, report, expect_text(path), time.monotonic() - t)
