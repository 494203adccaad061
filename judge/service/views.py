"""What each person may see: a job's status and report, its progress, and the leaderboard.

Staff see the judge's whole report (never its seed, which the store does not keep) and the grade under the
rubric. A student sees what depends only on what the rubric shows now (judge.grading.rubric.student_view):
two files that differ only in a group hidden now give the same report, status, events and leaderboard,
apart from ids and times. While any group is hidden from a student:

* a hidden group keeps only its name; the verdict, message and score count only the shown groups (a verdict
  about the whole file, decided before any group ran, is shown as it is);
* the speed part is withheld (it runs only when every group passes), and so are the notes and what the
  submission printed (they may come from any group's cases), and the report's details unless the verdict is
  about the whole file;
* a running job's progress in a hidden group, or in its speed run, is "hidden tests";
* the leaderboard ranks by what the student is shown (a hidden group never puts anyone on or off it, and
  no speedup is listed); after the deadline, by everything.

"Now" is the student's own deadline when staff gave them an extension. Students only ever see their own
jobs; the API answers 404 for anyone else's, as for a job that does not exist.
"""

from __future__ import annotations

import datetime as dt

from judge.grading.rubric import Rubric, file_level, grade, student_view, visibility
from judge.problems import Problem, find_problem
from judge.verdicts import MEANINGS, Verdict

STATUS_FIELDS = (
    "id",
    "student",
    "problem",
    "filename",
    "sha256",
    "status",
    "attempts",
    "verdict",
    "cached",
    "submitted_at",
    "started_at",
    "finished_at",
)
HIDDEN_PROGRESS = {"phase": "testing", "group": "hidden tests"}


def can_see(who, job: dict | None) -> bool:
    return job is not None and (who.staff or job["student"] == who.name)


def report_for(
    who, job: dict, rubric: Rubric, now: dt.datetime | None = None, deadline: dt.datetime | None = None
) -> dict | None:
    """The report WHO may read of a finished JOB (None while it is not done)."""
    report = job.get("report")
    if job["status"] != "done" or report is None:
        return None
    if who.staff:
        return report
    problem = find_problem(str(job["problem"]))
    if problem is None:
        return None
    return student_report(report, problem, rubric, now, deadline)


def done_views(
    who, job: dict, rubric: Rubric, now: dt.datetime | None = None, deadline: dt.datetime | None = None
) -> tuple[dict | None, dict | None]:
    """(the report WHO may read, the grade WHO may see) of a finished JOB, the rubric applied once."""
    report = job.get("report")
    problem = find_problem(str(job["problem"]))
    if job["status"] != "done" or report is None or problem is None:
        return (report if who.staff and job["status"] == "done" else None), None
    graded = grade(report, problem, rubric)
    if who.staff:
        return report, graded
    return student_report(report, problem, rubric, now, deadline, graded), student_view(graded, rubric, now, deadline)


def graded_for(
    who, job: dict, rubric: Rubric, now: dt.datetime | None = None, deadline: dt.datetime | None = None
) -> dict | None:
    """The grade under the rubric: everything for staff, the student view for a student."""
    report = job.get("report")
    problem = find_problem(str(job["problem"]))
    if job["status"] != "done" or report is None or problem is None:
        return None
    graded = grade(report, problem, rubric)
    return graded if who.staff else student_view(graded, rubric, now, deadline)


def student_report(
    report: dict,
    problem: Problem,
    rubric: Rubric,
    now: dt.datetime | None = None,
    deadline: dt.datetime | None = None,
    graded: dict | None = None,
) -> dict:
    """The judge's report as a student may read it now: shaped like the report (version 1), built from the
    rubric's student view only (GRADED: the report's grade, when the caller has it)."""
    graded = graded or grade(report, problem, rubric)
    view = student_view(graded, rubric, now, deadline)
    everything = view["all_shown"]
    by_name = {g.get("name"): g for g in report.get("groups") or []}
    groups = [
        g if g.get("hidden") else {**g, "cases_run": by_name.get(g["name"], {}).get("cases_run")}
        for g in view["groups"]
    ]
    if everything:
        speed = {
            **(report.get("speed") or {}),
            "points": view["speed"]["points"],
            "max_points": view["speed"]["max_points"],
        }
    else:
        speed = dict(view["speed"])
    verdict = view["verdict"]
    out = {
        "version": report.get("version", 1),
        "verdict": verdict,
        "verdict_meaning": MEANINGS.get(Verdict(verdict), "") if verdict in Verdict.__members__ else "",
        "score": view["score"],
        "max_score": view["max_score"],
        "hidden_points": view["hidden_points"],
        "message": view["message"],
        "details": (report.get("details") or {}) if everything or file_level(graded) else {},
        "problem": view["problem"],
        "submission": view["submission"],
        "mode": report.get("mode") or {},
        "groups": groups,
        "speed": speed,
        "notes": list(report.get("notes") or []) if everything else [],
        "elapsed_seconds": report.get("elapsed_seconds"),
        "deadline": (deadline or rubric.deadline).isoformat() if (deadline or rubric.deadline) else None,
        "deadline_passed": rubric.past_deadline(now, deadline),
    }
    if everything:
        out["output"] = report.get("output") or ""
    return out


def progress_for(
    who,
    job: dict,
    event: dict | None,
    rubric: Rubric,
    now: dt.datetime | None = None,
    deadline: dt.datetime | None = None,
) -> dict | None:
    """Where a running job is, as WHO may know it: for a student, a group hidden now, and the speed run while
    any group is hidden, are "hidden tests"."""
    if not event:
        return None
    problem = find_problem(str(job["problem"]))
    masked = False
    if not who.staff and problem is not None:
        shown = {g.name for g in problem.groups if _visible_now(rubric, problem, g.name, now, deadline)}
        masked = len(shown) < len(problem.groups)
        if "group" in event and str(event.get("group")) not in shown:
            return dict(HIDDEN_PROGRESS)
    if "group" in event:
        return {
            "phase": "testing",
            "group": str(event.get("group")),
            "index": event.get("index"),
            "groups": event.get("groups"),
        }
    if event.get("phase") == "timing":
        return dict(HIDDEN_PROGRESS) if masked else {"phase": "timing"}
    if "wait" in event:
        return dict(HIDDEN_PROGRESS) if masked else {"phase": "waiting", "message": "waiting for the GPU"}
    return None


def _visible_now(rubric: Rubric, problem: Problem, group: str, now, deadline=None) -> bool:
    vis = visibility(rubric.for_problem(problem), group)
    return vis == "visible" or (vis == "after_due_date" and rubric.past_deadline(now, deadline))


# ---------------------------------------------------------------------- the leaderboard


def leaderboard(
    rows: list[dict],
    problem: Problem,
    rubric: Rubric,
    exclude: set[str],
    people: dict[str, dict],
    viewer=None,
    now: dt.datetime | None = None,
    deadline: dt.datetime | None = None,
) -> list[dict]:
    """Each student's best accepted submission of PROBLEM, fastest first (the measured speedup; one not
    measured, as in the interpreter, after every measured one), ties by who got there first.

    As VIEWER may see it: a student, before their deadline, sees it ranked by what they are shown (accepted
    in the shown groups, no speedup while a group is hidden); each entry is named by the display name its
    student chose to show, else "anonymous", and the viewer's own is marked ``me``. Staff (and no VIEWER)
    see everything, with the students' names."""
    staff = viewer is None or viewer.staff
    after = staff or rubric.past_deadline(now, deadline)
    best: dict[str, dict] = {}
    for row in rows:
        if row["problem"] != problem.id or row["student"] in exclude:
            continue
        graded = grade(row["report"], problem, rubric)
        if after:
            verdict, speedup, score, most = graded["verdict"], row.get("speedup"), graded["score"], graded["max_score"]
        else:
            view = student_view(graded, rubric, now, deadline)
            verdict, score, most = view["verdict"], view["score"], view["max_score"]
            speedup = row.get("speedup") if view["all_shown"] else None
        if verdict != Verdict.AC:
            continue
        key = (speedup is not None, speedup or 0.0, _neg_time(row["graded_at"]))
        old = best.get(row["student"])
        if old is None or key > old["_key"]:
            best[row["student"]] = {
                "student": row["student"],
                "speedup": speedup,
                "score": score,
                "max_score": most,
                "at": row["graded_at"],
                "_key": key,
            }
    out = sorted(best.values(), key=lambda r: (r["_key"], _neg(r["student"])), reverse=True)
    for rank, r in enumerate(out, start=1):
        r["rank"] = rank
        del r["_key"]
        person = people.get(r["student"]) or {}
        r["name"] = (
            person["display_name"] if person.get("on_leaderboard") and person.get("display_name") else "anonymous"
        )
        r["me"] = viewer is not None and r["student"] == viewer.name
        if not staff:
            del r["student"]
    return out


def _neg(name: str) -> tuple:
    return tuple(-ord(c) for c in name)  # ties: by name, ascending, inside a descending sort


def _neg_time(iso: str) -> float:
    try:
        return -dt.datetime.fromisoformat(iso).timestamp()
    except (TypeError, ValueError):
        return 0.0
