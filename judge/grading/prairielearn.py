"""PrairieLearn external grader: ``/grade/data/data.json`` + ``/grade/student/`` in, ``/grade/results/results.json`` out.

Schema (PrairieLearn's externalGrading docs): ``score`` in [0, 1]; ``gradable:
false`` with ``format_errors`` when the submission cannot be graded at all, which
costs the student no attempt: here a CE-type failure (no file, a syntax error,
a missing or wrong entry point, an unavailable module, a kernel Triton cannot
compile) and an internal error of the judge; ``tests[]`` with ``name``,
``points``, ``max_points``, ``message``, ``output`` on every test (PrairieLearn
shows per-test results only when all have points).

PrairieLearn has no per-test visibility: before the rubric's deadline the
groups it hides are left out of ``tests`` (their points still count in
``score``, which is the grade, and the message says so).
"""

from __future__ import annotations

import json
from pathlib import Path

from judge.grading.feedback import group_output
from judge.grading.job import platform_report
from judge.grading.roster import candidate_names
from judge.grading.rubric import Rubric, file_level, grade
from judge.problems import Problem
from judge.verdicts import Verdict

MAX_RESULTS_BYTES = 1 << 20  # PrairieLearn rejects a larger results file


def problem_key(data_path: Path) -> str | None:
    """The problem named by the question's params (``"problem": 94`` in the question's server.py/info)."""
    try:
        data = json.loads(data_path.read_text())
    except (OSError, ValueError):
        return None
    params = data.get("params") if isinstance(data, dict) else None
    value = params.get("problem") if isinstance(params, dict) else None
    return None if value is None else str(value)


def results(report: dict, graded: dict, rubric: Rubric) -> dict:
    verdict = graded["verdict"]
    if verdict == Verdict.CE:
        return {
            "gradable": False,
            "score": 0.0,
            "message": f"not graded (no attempt used): {graded['message']}",
            "format_errors": [graded["message"]],
        }
    if verdict == Verdict.IE:
        return {
            "gradable": False,
            "score": 0.0,
            "message": f"not graded: internal error of the judge ({graded['message']}); ask the course staff",
            "format_errors": ["the judge failed on this submission (not your fault); submit again later"],
        }
    after = rubric.past_deadline()
    tests, held_back = [], 0
    for g in graded["groups"]:
        if g["visibility"] == "visible" or (g["visibility"] == "after_due_date" and after):
            tests.append(
                {
                    "name": g["name"],
                    "description": g["about"],
                    "points": g["earned"],
                    "max_points": g["points"],
                    "message": g["verdict"] if not g["passed"] else "passed",
                    "output": group_output(g, graded["message"] if file_level(graded) else ""),
                }
            )
        else:
            held_back += 1
    speed = graded["speed"]
    if speed["max_points"]:
        tests.append(
            {
                "name": "speed",
                "description": "speed against the reference",
                "points": speed["points"],
                "max_points": speed["max_points"],
                "message": "scored" if speed["scored"] else "not scored",
                "output": speed.get("reason") or "",
            }
        )
    score = graded["score"] / graded["max_score"] if graded["max_score"] else 0.0
    message = f"{verdict}: {graded['message']}"
    if held_back:
        message += f" ({held_back} test group(s) are shown after the deadline; their points are in the score)"
    return {
        "gradable": True,
        "score": round(min(max(score, 0.0), 1.0), 6),
        "message": message,
        "output": "\n".join(report.get("notes") or []),
        "tests": tests,
    }


def run(
    problem: Problem,
    *,
    student_dir: Path,
    results_path: Path,
    rubric: Rubric,
    sandbox: str,
    device: str,
    forward: str | None,
    token: str | None,
    seed: int | None,
    timeout: float,
) -> dict:
    report = platform_report(
        problem,
        student_dir,
        rubric,
        sandbox=sandbox,
        device=device,
        forward=forward,
        token=token,
        seed=seed,
        timeout=timeout,
        missing=f"no submission file found in the submitted files; name it one of "
        f"{', '.join(candidate_names(problem))}",
    )
    graded = grade(report, problem, rubric)
    doc = results(report, graded, rubric)
    text = json.dumps(doc, indent=2)
    if len(text.encode()) > MAX_RESULTS_BYTES:  # never let a long output make the whole result unreadable
        for t in doc.get("tests", []):
            t["output"] = t["output"][:2000]
        doc["output"] = doc.get("output", "")[:2000]
        text = json.dumps(doc, indent=2)
    results_path.parent.mkdir(parents=True, exist_ok=True)  # PrairieLearn does not create /grade/results
    tmp = results_path.with_name(results_path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(results_path)
    return doc
