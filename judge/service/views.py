"""What each person may see: a job's status and report, the leaderboard, the staff's table.

Staff see the judge's whole report (never its seed, which the store does not
keep) and the grade under the rubric. A student sees the rubric's student
view (judge.grading.rubric.student_view): before the deadline the groups it
hides keep only their name, the verdict, message and score count only what
is shown, and nothing that could carry a hidden case out (what the
submission printed, notes naming a hidden group, why the speed run did not
happen) is included. Students only ever see their own jobs; the API answers
404 for anyone else's, as for a job that does not exist.
"""

from __future__ import annotations

import datetime as dt

from judge.grading.rubric import Rubric, grade, student_view
from judge.problems import Problem, find_problem
from judge.verdicts import MEANINGS, Verdict

STATUS_FIELDS = ("id", "student", "problem", "filename", "sha256", "status", "attempts", "verdict", "cached",
                 "submitted_at", "started_at", "finished_at")


def can_see(who, job: dict | None) -> bool:
    return job is not None and (who.staff or job["student"] == who.name)


def report_for(who, job: dict, rubric: Rubric, now: dt.datetime | None = None) -> dict | None:
    """The report WHO may read of a finished JOB (None while it is not done)."""
    report = job.get("report")
    if job["status"] != "done" or report is None:
        return None
    if who.staff:
        return report
    problem = find_problem(str(job["problem"]))
    if problem is None:
        return None
    return student_report(report, problem, rubric, now)


def graded_for(who, job: dict, rubric: Rubric, now: dt.datetime | None = None) -> dict | None:
    """The grade under the rubric: everything for staff, the student view for a student."""
    report = job.get("report")
    problem = find_problem(str(job["problem"]))
    if job["status"] != "done" or report is None or problem is None:
        return None
    graded = grade(report, problem, rubric)
    return graded if who.staff else student_view(graded, rubric, now)


def student_report(report: dict, problem: Problem, rubric: Rubric, now: dt.datetime | None = None) -> dict:
    """The judge's report as a student may read it now: shaped like the report (version 1), its groups,
    verdict, message and score from the rubric's student view."""
    graded = grade(report, problem, rubric)
    view = student_view(graded, rubric, now)
    hidden = [g["name"] for g in view["groups"] if g.get("hidden")]
    by_name = {g.get("name"): g for g in report.get("groups") or []}
    groups = []
    for g in view["groups"]:
        if g.get("hidden"):
            groups.append(g)
        else:
            groups.append({**g, "cases_run": by_name.get(g["name"], {}).get("cases_run")})
    verdict = view["verdict"]
    speed = dict(report.get("speed") or {})
    speed.update(points=graded["speed"]["points"], max_points=graded["speed"]["max_points"])
    if hidden and verdict != graded["verdict"]:
        # Why the speed run did not happen would name the hidden group's verdict.
        speed = {"scored": False, "points": 0.0, "max_points": graded["speed"]["max_points"],
                 "reason": "not measured"}
    out = {
        "version": report.get("version", 1),
        "verdict": verdict,
        "verdict_meaning": MEANINGS.get(Verdict(verdict), "") if verdict in Verdict.__members__ else "",
        "score": view["score"],
        "max_score": view["max_score"],
        "hidden_points": view["hidden_points"],
        "message": view["message"],
        "details": report.get("details") or {},
        "problem": view["problem"],
        "submission": view["submission"],
        "mode": report.get("mode") or {},
        "groups": groups,
        "speed": speed,
        "notes": [n for n in report.get("notes") or [] if not any(h in n for h in hidden)],
        "elapsed_seconds": report.get("elapsed_seconds"),
        "deadline": rubric.deadline.isoformat() if rubric.deadline else None,
        "deadline_passed": rubric.past_deadline(now),
    }
    if not hidden and report.get("output"):
        out["output"] = report["output"]  # what the submission printed could carry a hidden case out
    return out


def progress_for(who, job: dict, event: dict | None, rubric: Rubric, now: dt.datetime | None = None) -> dict | None:
    """Where a running job is, as WHO may know it: a group hidden from a student now is "hidden tests"."""
    if not event:
        return None
    if "group" in event:
        name = str(event.get("group"))
        if not who.staff:
            problem = find_problem(str(job["problem"]))
            if problem is not None and not _visible_now(rubric, problem, name, now):
                name = "hidden tests"
        return {"phase": "testing", "group": name, "index": event.get("index"), "groups": event.get("groups")}
    if event.get("phase") == "timing":
        return {"phase": "timing"}
    if "wait" in event:
        return {"phase": "waiting", "message": "waiting for the GPU"}
    return None


def _visible_now(rubric: Rubric, problem: Problem, group: str, now) -> bool:
    from judge.grading.rubric import visibility

    vis = visibility(rubric.for_problem(problem), group)
    return vis == "visible" or (vis == "after_due_date" and rubric.past_deadline(now))


# ---------------------------------------------------------------------- the leaderboard


def leaderboard(rows: list[dict], problem: Problem, rubric: Rubric, exclude: set[str]) -> list[dict]:
    """Each student's best accepted submission of PROBLEM, fastest first (the measured speedup; one not
    measured, as in the interpreter, after every measured one), ties by who got there first."""
    best: dict[str, dict] = {}
    for row in rows:
        if row["problem"] != problem.id or row["student"] in exclude or row["verdict"] != "AC":
            continue
        speedup = row.get("speedup")
        key = (speedup is not None, speedup or 0.0, _neg_time(row["graded_at"]))
        old = best.get(row["student"])
        if old is None or key > old["_key"]:
            best[row["student"]] = {"student": row["student"], "speedup": speedup, "score": row["score"],
                                    "max_score": row["max_score"], "at": row["graded_at"],
                                    "sha256": row["sha256"][:12], "_key": key}
    out = sorted(best.values(), key=lambda r: r["_key"], reverse=True)
    for rank, r in enumerate(out, start=1):
        r["rank"] = rank
        del r["_key"]
    return out


def _neg_time(iso: str) -> float:
    try:
        return -dt.datetime.fromisoformat(iso).timestamp()
    except (TypeError, ValueError):
        return 0.0


# ---------------------------------------------------------------------- the staff's table


def staff_table(best: dict, students: list[str]) -> dict:
    """Rows per student (the roster's, and anyone with a result), a column per problem with a result: the
    best result's verdict and score (judge.grading.batch.best_rows)."""
    problems = sorted({pid for (_s, pid) in best})
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
            cells.append({"verdict": g["verdict"], "score": g["score"], "max_score": g["max_score"],
                          "speedup": row.get("speedup"), "sha256": row["sha256"]})
            total += g["score"]
            most += g["max_score"]
        rows.append({"student": name, "cells": cells, "score": round(total, 2), "max_score": round(most, 2)})
    return {"problems": problems, "rows": rows}
