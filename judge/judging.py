"""The one place that decides how a file is judged: by the problem's kind.

``submit``/``test`` (judge.cli), ``grade``, Gradescope and PrairieLearn
(judge.grading.job), the self-test and ``verify`` (judge.selftest) all call
:func:`judge_file`: a kernel problem runs a Session (a worker, the golden
model, the speed run); an answers problem reads the file as data
(judge.answers: nothing runs).
"""

from __future__ import annotations

from pathlib import Path

from judge.verdicts import Report


def judge_file(problem, path: Path, options) -> Report:
    """PROBLEM's report for the file at PATH under OPTIONS (judge.options.Options)."""
    if problem.kind == "answers":
        from judge.answers import judge_answers

        return judge_answers(problem, path, options)
    from judge.session import Session

    return Session(problem, path, options).run()
