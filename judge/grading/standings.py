"""The course's standings: which submission counts per student and problem, and the staff's CSV and table.

Per (student, problem) one result counts (``best_rows``): the best score under the current rubric (ties: the
latest), or, for a problem whose staff chose "last" (judge.grading.course_record), the last one submitted
that is not an internal error of the judge. Staff decisions are applied on top, never to the stored result:
an override replaces the score (``score``; the judged one stays in ``judged_score``), and each row says the
student's deadline (an extension's, else the rubric's) and whether the counted submission came after it
(``late``; a result of ``judge grade`` has no submission time and is never late).

Totals count every problem of the course for every student (``course_problems``): a problem a student never
submitted scores 0 of its maximum, so totals compare across students.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from judge.grading import csv_safe
from judge.grading.course_record import CourseRecord
from judge.grading.rubric import Rubric, grade
from judge.grading.store import Store
from judge.problems import Problem, find_problem
from judge.verdicts import Verdict

CSV_COLUMNS = [
    "student",
    "problem",
    "slug",
    "verdict",
    "score",
    "max_score",
    "speedup",
    "groups_passed",
    "path",
    "sha256",
    "graded_at",
    "counts",
    "judged_score",
    "override_reason",
    "override_by",
    "deadline",
    "late",
    "regraded_at",
]


def best_rows(store: Store, rubric: Rubric) -> dict[tuple[str, int], dict]:
    """Per (student, problem) the result that counts, graded under the current rubric (``graded``), with the
    staff's decisions: ``counts``, ``override``, ``score`` (the override's, else the judged one), ``deadline``,
    ``late`` and ``regraded_at``."""
    record = CourseRecord(store)
    counting, overrides, extensions = record.counting(), record.overrides(), record.extensions()
    rounds = {r["round"]: r["at"] for r in store.regrades()}
    best: dict[tuple[str, int], dict] = {}
    problems: dict[int, Problem | None] = {}
    for row in store.rows():
        pid = row["problem"]
        if pid not in problems:
            problems[pid] = find_problem(str(pid))
        if problems[pid] is None:
            continue
        row["graded"] = grade(row["report"], problems[pid], rubric)
        key = (row["student"], pid)
        old = best.get(key)
        if old is None or _better(row, old, counting.get(pid, "best")):
            best[key] = row
    for key, _over in overrides.items():
        if key not in best:  # staff gave points for a problem with no result
            problem = problems.get(key[1]) or find_problem(str(key[1]))
            if problem is not None:
                best[key] = _no_result(key[0], problem, rubric)
    for (student, pid), row in best.items():
        over = overrides.get((student, pid))
        row["counts"] = counting.get(pid, "best")
        row["judged_score"] = row["graded"]["score"]
        row["override"] = over
        row["score"] = over["score"] if over else row["graded"]["score"]
        ext = extensions.get(student)
        deadline = dt.datetime.fromisoformat(ext["deadline"]) if ext else rubric.deadline
        row["deadline"] = deadline.isoformat() if deadline else None
        at = row.get("last_at") if row["counts"] == "last" else row.get("first_at")
        row["late"] = bool(deadline and at and dt.datetime.fromisoformat(at) > deadline)
        row["regraded_at"] = rounds.get(row.get("regrade") or 0)
    return best


def _better(row: dict, old: dict, counts: str) -> bool:
    if counts == "last":
        if (row["verdict"] == Verdict.IE) != (old["verdict"] == Verdict.IE):
            return old["verdict"] == Verdict.IE  # a failure of the judge never replaces a judged submission
        return (row.get("last_at") or row["graded_at"]) >= (old.get("last_at") or old["graded_at"])
    return row["graded"]["score"] >= old["graded"]["score"]


def max_score(problem: Problem, rubric: Rubric, interpret: bool) -> float:
    """A problem's maximum under the rubric, as a result judged in this mode would have it."""
    return grade({"verdict": Verdict.CE.value, "mode": {"interpret": interpret}}, problem, rubric)["max_score"]


def _no_result(student: str, problem: Problem, rubric: Rubric, interpret: bool = True) -> dict:
    graded = grade(
        {"verdict": Verdict.CE.value, "message": "no submission", "mode": {"interpret": interpret}}, problem, rubric
    )
    graded.update(verdict="", score=0.0, groups=[])
    return {
        "student": student,
        "problem": problem.id,
        "sha256": "",
        "path": None,
        "speedup": None,
        "graded_at": "",
        "graded": graded,
        "missing": True,
        "first_at": None,
        "last_at": None,
    }


def course_problems(rubric: Rubric, best: dict) -> list[int]:
    """The course's problems: the rubric's (its [problems.ID] tables) when it names any, else every problem
    with a result."""
    return sorted(set(rubric.problems) or {pid for (_s, pid) in best})


def fill_missing(best: dict, students, problems, rubric: Rubric, interpret: bool) -> dict:
    """BEST with a row (score 0 of the problem's maximum, ``missing``) for each student of STUDENTS (and each
    with a result) and problem of PROBLEMS that has none."""
    out = dict(best)
    names = set(students) | {s for (s, _p) in best}
    for pid in problems:
        problem = find_problem(str(pid))
        if problem is None:
            continue
        for name in names:
            if (name, pid) not in out:
                row = _no_result(name, problem, rubric, interpret)
                row.update(
                    counts="best",
                    judged_score=0.0,
                    override=None,
                    score=0.0,
                    deadline=None,
                    late=False,
                    regraded_at=None,
                )
                out[(name, pid)] = row
    return out


def staff_table(best: dict, students, problems: list[int]) -> dict:
    """Rows per student (the roster's, and anyone with a result), a column per problem of the course: the
    counted result's verdict and score (an override's, marked), and totals over every column."""
    names = sorted(set(students) | {s for (s, _p) in best})
    rows = []
    for name in names:
        cells, total, most = [], 0.0, 0.0
        for pid in problems:
            row = best.get((name, pid))
            if row is None:
                cells.append(None)
                continue
            g = row["graded"]
            cells.append(
                {
                    "verdict": g["verdict"],
                    "score": row.get("score", g["score"]),
                    "max_score": g["max_score"],
                    "judged_score": g["score"],
                    "override": row.get("override"),
                    "late": row.get("late"),
                    "speedup": row.get("speedup"),
                    "sha256": row["sha256"],
                    "missing": bool(row.get("missing")),
                }
            )
            total += cells[-1]["score"]
            most += g["max_score"]
        rows.append({"student": name, "cells": cells, "score": round(total, 2), "max_score": round(most, 2)})
    return {"problems": list(problems), "rows": rows}


def write_csv(best: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        write_csv_to(best, f)


def write_csv_to(best: dict, f) -> None:
    """The CSV export (one row per student and problem: the result that counts) into the text stream F;
    no cell is a formula to a spreadsheet (judge.grading.csv_safe)."""
    w = csv_safe.writer(f)
    w.writerow(CSV_COLUMNS)
    for (student, pid), row in sorted(best.items()):
        g = row["graded"]
        over = row.get("override") or {}
        w.writerow(
            [
                student,
                pid,
                g["problem"]["slug"],
                g["verdict"],
                row.get("score", g["score"]),
                g["max_score"],
                "" if row.get("speedup") is None else row["speedup"],
                ";".join(x["name"] for x in g["groups"] if x["passed"]),
                row["path"] or "",
                row["sha256"],
                row["graded_at"],
                row.get("counts", "best"),
                row.get("judged_score", g["score"]),
                over.get("reason", ""),
                over.get("by", ""),
                row.get("deadline") or "",
                "yes" if row.get("late") else "",
                row.get("regraded_at") or "",
            ]
        )
