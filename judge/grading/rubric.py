"""The course's rubric (TOML) and how it turns a judge report into a grade.

The judge's report says which groups passed; the rubric says what they are
worth to this course, what students may see and when, and the secret seed of
the graded ("hidden") runs. Scoring is applied after judging, so the judge's
verdict logic is untouched and a changed rubric re-scores stored results
without judging again. See ``judge/grading/rubric.example.toml`` for every key.

Visibility: a group visible before the deadline is visible after it too;
a group in neither list is hidden from students (staff see everything).
The secret seed is never written to anything a student sees: only seeds
derived from it by SHA-256 (one per problem) reach the judge.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePath

from judge.problems import Problem, find_problem
from judge.verdicts import MEANINGS, ZERO_SCORE, Verdict


class RubricError(Exception):
    """The rubric file is wrong: a usage error (exit 2), one line."""


@dataclass
class ProblemRubric:
    points: dict[str, float] = field(default_factory=dict)  # group -> points (override)
    visible_before: list[str] | None = None  # None: every group
    visible_after: list[str] | None = None
    speed: dict = field(default_factory=dict)  # passed through to the speed part; see speed_points()


@dataclass
class Rubric:
    deadline: dt.datetime | None = None
    secret_seed: str | None = field(default=None, repr=False)  # never printed: repr hides it
    problems: dict[int, ProblemRubric] = field(default_factory=dict)
    source: str = ""  # the file it came from

    def for_problem(self, problem: Problem) -> ProblemRubric:
        return self.problems.get(problem.id, ProblemRubric())

    def seed_for(self, problem: Problem) -> int | None:
        """The judge seed for PROBLEM's graded runs: the same for every student, unguessable without the secret."""
        if self.secret_seed is None:
            return None
        # As judge.cases.derive_seed (not imported: this module must load without hypothesis or torch,
        # for the Gradescope bundle's forward mode); SHA-256 keeps the secret out of reach of the seed.
        digest = hashlib.sha256("\x00".join(["graded-run", self.secret_seed, str(problem.id)]).encode()).digest()
        return int.from_bytes(digest[:4], "big") >> 1

    def past_deadline(self, now: dt.datetime | None = None, deadline: dt.datetime | None = None) -> bool:
        """Whether the deadline has passed at NOW: DEADLINE (a student's own, an extension) instead of the
        rubric's when given."""
        deadline = deadline or self.deadline
        if deadline is None:
            return True  # no deadline: everything the rubric allows after it is visible now
        return (now or dt.datetime.now(dt.UTC)) >= deadline


def load_rubric(path: Path | None) -> Rubric:
    if path is None:
        return Rubric()
    try:
        spec = tomllib.loads(Path(path).read_text())
    except OSError as exc:
        raise RubricError(f"cannot read the rubric {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise RubricError(f"{path}: not valid TOML: {exc}") from None
    where = str(path)
    known = {"deadline", "secret_seed", "secret_seed_env", "problems"}
    unknown = set(spec) - known
    if unknown:
        raise RubricError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; valid: {', '.join(sorted(known))}")
    rubric = Rubric(source=where)
    deadline = spec.get("deadline")
    if deadline is not None:
        if not isinstance(deadline, dt.datetime) or deadline.tzinfo is None:
            raise RubricError(f"{where}: deadline must be a TOML date-time with a time zone, e.g. 2026-12-15T23:59:00Z")
        rubric.deadline = deadline
    if "secret_seed" in spec and "secret_seed_env" in spec:
        raise RubricError(f"{where}: give secret_seed or secret_seed_env, not both")
    if "secret_seed" in spec:
        rubric.secret_seed = str(spec["secret_seed"])
    elif "secret_seed_env" in spec:
        name = str(spec["secret_seed_env"])
        if not os.environ.get(name):
            raise RubricError(f"{where}: secret_seed_env names ${name}, which is not set")
        rubric.secret_seed = os.environ[name]
    if rubric.secret_seed is not None and len(rubric.secret_seed) < 8:
        raise RubricError(f"{where}: the secret seed must be at least 8 characters (it must not be guessable)")
    problems = spec.get("problems", {})
    if not isinstance(problems, dict):
        raise RubricError(f"{where}: [problems] must be a table of [problems.ID] tables")
    for key, table in problems.items():
        problem = find_problem(str(key))
        if problem is None:
            raise RubricError(f"{where}: [problems.{key}]: unknown problem")
        rubric.problems[problem.id] = _problem_rubric(table, problem, f"{where} [problems.{key}]")
    return rubric


def _group_list(value, problem: Problem, where: str) -> list[str]:
    names = [g.name for g in problem.groups]
    if value == "all":
        return names
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RubricError(f'{where}: must be a list of group names or "all"')
    for v in value:
        if v not in names:
            raise RubricError(f"{where}: unknown group '{v}'; valid: {', '.join(names)}")
    return list(value)


def _problem_rubric(table, problem: Problem, where: str) -> ProblemRubric:
    if not isinstance(table, dict):
        raise RubricError(f"{where}: must be a table")
    known = {"points", "visible_before_deadline", "visible_after_deadline", "speed"}
    unknown = set(table) - known
    if unknown:
        raise RubricError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; valid: {', '.join(sorted(known))}")
    pr = ProblemRubric()
    names = [g.name for g in problem.groups]
    points = table.get("points", {})
    if not isinstance(points, dict):
        raise RubricError(f"{where}: points must be a table of group = points")
    for name, value in points.items():
        if name not in names:
            raise RubricError(f"{where}.points: unknown group '{name}'; valid: {', '.join(names)}")
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
            raise RubricError(f"{where}.points.{name}: must be a number >= 0")
        pr.points[name] = float(value)
    if "visible_before_deadline" in table:
        pr.visible_before = _group_list(table["visible_before_deadline"], problem, f"{where}.visible_before_deadline")
    if "visible_after_deadline" in table:
        pr.visible_after = _group_list(table["visible_after_deadline"], problem, f"{where}.visible_after_deadline")
    before = set(pr.visible_before if pr.visible_before is not None else names)
    after = set(pr.visible_after if pr.visible_after is not None else names)
    if not before <= after:
        raise RubricError(
            f"{where}: group(s) {', '.join(sorted(before - after))} visible before the deadline "
            "must stay visible after it"
        )
    if problem.kind == "kernel":
        # A group that hangs, runs out of memory or breaks a rule stops the run: the groups after it are
        # "not run". A shown group after a hidden one would tell how the hidden one went.
        for key, shown in (("visible_before_deadline", before), ("visible_after_deadline", after)):
            first = next((n for n in names if n not in shown), None)
            later = [n for n in names[names.index(first) :] if n in shown] if first else []
            if later:
                raise RubricError(
                    f"{where}.{key}: '{later[0]}' is shown but comes after '{first}', which is not: "
                    "a failure there can stop the later groups, which would show it; show the "
                    f"groups in the problem's order ({', '.join(names)})"
                )
    speed = table.get("speed", {})
    if not isinstance(speed, dict):
        raise RubricError(f"{where}.speed: must be a table")
    if "max_points" in speed and (not isinstance(speed["max_points"], (int, float)) or speed["max_points"] < 0):
        raise RubricError(f"{where}.speed.max_points: must be a number >= 0")
    curve = speed.get("curve")
    if curve is not None:
        ok = (
            isinstance(curve, list)
            and len(curve) >= 2
            and all(isinstance(p, list) and len(p) == 2 and all(isinstance(v, (int, float)) for v in p) for p in curve)
            and all(a[0] < b[0] for a, b in zip(curve, curve[1:]))
            and all(0 <= p[1] <= 1 for p in curve)
        )
        if not ok:
            raise RubricError(
                f"{where}.speed.curve: must be [[speedup, fraction], ...] with increasing speedups "
                "and fractions in [0, 1]"
            )
    pr.speed = dict(speed)
    return pr


def visibility(pr: ProblemRubric, group: str) -> str:
    """Gradescope's words: visible, after_due_date or hidden."""
    if pr.visible_before is None or group in pr.visible_before:
        return "visible"
    if pr.visible_after is None or group in pr.visible_after:
        return "after_due_date"
    return "hidden"


def speed_points(pr: ProblemRubric, speed: dict, problem: Problem, measurable: bool = True) -> tuple[float, float]:
    """(points, max_points) for speed, from the report's speed part (computed elsewhere, never here).

    The rubric's ``speed.curve`` maps the report's ``speedup`` piecewise-linearly to
    a fraction of ``speed.max_points``; without a curve the report's own points
    are scaled to the rubric's maximum. Unscored speed earns 0. Without a
    ``speed.max_points`` in the rubric, the maximum is the report's speed points
    where the grading mode measures speed (``measurable``: on a GPU) and 0 in
    interpreter mode, so that an accepted submission there scores 100%; a rubric
    that sets it keeps it in the maximum either way.
    """
    reported_max = float(speed.get("max_points", problem.speed_points) or 0)
    max_points = float(pr.speed.get("max_points", reported_max if measurable else 0.0))
    if not speed.get("scored"):
        return 0.0, max_points
    curve = pr.speed.get("curve")
    speedup = speed.get("speedup")
    if curve and isinstance(speedup, (int, float)):
        return round(max_points * _interpolate(curve, float(speedup)), 2), max_points
    points = float(speed.get("points", 0) or 0)
    return round(points * max_points / reported_max, 2) if reported_max else 0.0, max_points


def _interpolate(curve, x: float) -> float:
    if x <= curve[0][0]:
        return float(curve[0][1])
    for (x0, y0), (x1, y1) in zip(curve, curve[1:]):
        if x <= x1:
            return float(y0 + (y1 - y0) * (x - x0) / (x1 - x0))
    return float(curve[-1][1])


def grade(report: dict, problem: Problem, rubric: Rubric) -> dict:
    """The judge's JSON report scored under the rubric (staff view: everything, the seed removed)."""
    pr = rubric.for_problem(problem)
    verdict = report.get("verdict", Verdict.IE.value)
    zero = verdict in ZERO_SCORE
    groups = []
    by_name = {g.get("name"): g for g in report.get("groups") or []}
    for g in problem.groups:
        got = by_name.get(g.name, {})
        points = pr.points.get(g.name, g.points)
        passed = bool(got.get("passed"))
        groups.append(
            {
                "name": g.name,
                "about": g.about,
                "points": points,
                "earned": points if passed and not zero else 0.0,
                "passed": passed,
                "verdict": got.get("verdict", verdict),
                "skipped": got.get("skipped"),
                "failure": got.get("failure"),
                "visibility": visibility(pr, g.name),
            }
        )
    speed = report.get("speed") or {}
    mode = report.get("mode") or {}
    s_points, s_max = speed_points(pr, speed, problem, measurable=not (mode.get("interpret") or mode.get("quick")))
    if zero:
        s_points = 0.0
    max_score = round(sum(g["points"] for g in groups) + s_max, 2)
    return {
        "problem": {"id": problem.id, "slug": problem.slug, "title": problem.title},
        "verdict": verdict,
        "message": report.get("message", ""),
        "details": report.get("details") or {},
        "score": round(sum(g["earned"] for g in groups) + s_points, 2),
        "max_score": max_score,
        "groups": groups,
        "speed": {
            "scored": bool(speed.get("scored")),
            "points": s_points,
            "max_points": s_max,
            "speedup": speed.get("speedup"),
            "reason": speed.get("reason"),
        },
        "submission": _file_only(report.get("submission") or {}),
        "elapsed_seconds": report.get("elapsed_seconds"),
        "notes": report.get("notes") or [],
    }


def _file_only(submission: dict) -> dict:
    """The report's submission with its file's name only: no folder of the grading host in what students see
    (reports of older runs may still hold the full path)."""
    path = submission.get("path")
    return {**submission, "path": PurePath(str(path)).name if path else path}


SPEED_WITHHELD = "shown when every test group is shown (the speed run happens only when all of them pass)"


def file_level(graded: dict) -> bool:
    """Whether the verdict is about the whole file, decided before any test group ran (a compile error, a
    refusal of the static scan, a failure of the judge at the start): every group has it and none ran a case."""
    return graded["verdict"] in (Verdict.CE, Verdict.RJ, Verdict.IE) and not any(
        g["passed"] or (g.get("failure") or {}).get("message") for g in graded["groups"]
    )


def student_view(
    graded: dict, rubric: Rubric, now: dt.datetime | None = None, deadline: dt.datetime | None = None
) -> dict:
    """What a student may see now (DEADLINE: theirs, when an extension moved it): it depends only on what
    the rubric shows now. Groups hidden now keep only their name; the verdict, message and totals count only
    the shown ones (a verdict about the whole file, decided before any group ran, is shown as it is); the
    speed part is shown only when every group is (it runs only when all of them pass). ``all_shown`` says
    whether everything is shown."""
    after = rubric.past_deadline(now, deadline)
    shown, hidden_points = [], 0.0
    for g in graded["groups"]:
        vis = g["visibility"]
        if vis == "visible" or (vis == "after_due_date" and after):
            shown.append(
                {k: g[k] for k in ("name", "about", "points", "earned", "passed", "verdict", "skipped", "failure")}
            )
        else:
            hidden_points += g["points"]
            shown.append(
                {
                    "name": g["name"],
                    "hidden": True,
                    "about": "results shown after the deadline" if vis == "after_due_date" else "hidden",
                }
            )
    visible = [g for g in shown if not g.get("hidden")]
    all_shown = len(visible) == len(shown)
    speed = graded["speed"]
    verdict, message = graded["verdict"], graded["message"]
    if not all_shown:
        hidden_points += speed["max_points"]
        speed = {
            "scored": False,
            "points": 0.0,
            "max_points": 0.0,
            "speedup": None,
            "reason": SPEED_WITHHELD,
            "withheld": True,
        }
        if not file_level(graded):
            from judge.verdicts import Verdict, worst

            if verdict not in ZERO_SCORE:  # the verdict could come from a hidden group: over the shown ones
                verdict = worst(Verdict(g["verdict"]) for g in visible if not g["passed"]).value
            message = _visible_message(visible, verdict)
    return {
        "problem": graded["problem"],
        "verdict": verdict,
        "message": message,
        "score": round(sum(g["earned"] for g in visible) + speed["points"], 2),
        "max_score": round(sum(g["points"] for g in visible) + speed["max_points"], 2),
        "hidden_points": round(hidden_points, 2),
        "groups": shown,
        "speed": speed,
        "submission": graded["submission"],
        "all_shown": all_shown,
    }


def _visible_message(visible: list[dict], verdict: str) -> str:
    for g in visible:
        if not g["passed"] and g["verdict"] == verdict and (g.get("failure") or {}).get("message"):
            return f"{g['name']}: {g['failure']['message']}"
    if verdict == Verdict.AC:
        return "all shown tests passed"

    meaning = MEANINGS.get(Verdict(verdict), verdict) if verdict in Verdict.__members__ else verdict
    return f"{meaning}, in a test whose results are shown after the deadline" if verdict in ZERO_SCORE else meaning
