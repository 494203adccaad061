"""What a student may see, without a server: the student view depends only on what the rubric shows.

Two reports of one kernel problem that differ only in a group the rubric hides (one passes it and is timed,
the other fails it) must give a student the same report, progress and leaderboard, while staff see the
difference; after the deadline the student sees it too. Also: a compile error's headline under a rubric, in
the service's view, `judge grade`'s student reports and Gradescope's results; the rubric's rule that shown
groups come first; and CSV cells that a spreadsheet would run, in every CSV the judge writes.
"""

import csv
import datetime as dt
import io
import json
import re
from pathlib import Path

import pytest

from judge.grading.rubric import RubricError, grade, load_rubric, student_view
from judge.problems import find_problem
from judge.service import views
from judge.service.auth import Identity

P93 = find_problem("93")
P101 = find_problem("101")
NOW = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
ALICE, BOB, TA = Identity("alice", "student"), Identity("bob", "student"), Identity("ta", "staff")


def rubric_file(tmp_path, deadline="2029-06-01T00:00:00Z", body=None) -> Path:
    path = tmp_path / "rubric.toml"
    path.write_text(
        f"deadline = {deadline}\n"
        + (
            body
            or """
[problems.93]
visible_before_deadline = ["small-ragged", "block-edges"]
visible_after_deadline = "all"
[problems.101]
visible_before_deadline = ["programs", "masked_lanes"]
visible_after_deadline = "all"
"""
        )
    )
    return path


def kernel_report(fail_hidden: bool) -> dict:
    """A report of 93 in the interpreter: every group passed, or all but the hidden 'large' (WA)."""
    groups = []
    for g in P93.groups:
        failed = fail_hidden and g.name == "large"
        groups.append(
            {
                "name": g.name,
                "about": g.about,
                "points": g.points,
                "earned": 0 if failed else g.points,
                "passed": not failed,
                "verdict": "WA" if failed else "AC",
                "cases_run": 7,
                "skipped": None,
                "failure": {
                    "case": {"n": 1 << 20, "seed": 99},
                    "message": "wrong values at the tail 1777",
                    "details": {"hint": "the last block"},
                    "reproduce": "python -m judge test 93 x.py --group large",
                }
                if failed
                else None,
            }
        )
    speed = (
        {"scored": False, "points": 0, "max_points": 30, "reason": "not measured: WA before the speed run"}
        if fail_hidden
        else {
            "scored": True,
            "points": 21.0,
            "max_points": 30,
            "speedup": 1.7,
            "geomean_speedup": 1.7,
            "reason": "1.70x the reference",
            "shapes": [{"shape": "n=1048576"}],
        }
    )
    return {
        "version": 1,
        "verdict": "WA" if fail_hidden else "AC",
        "verdict_meaning": "",
        "message": "large: wrong values at the tail 1777" if fail_hidden else "all tests passed",
        "details": {},
        "problem": {"id": 93, "slug": P93.slug, "title": P93.title},
        "submission": {"path": "add.py", "sha256": ("b" if fail_hidden else "a") * 64},
        "mode": {"device": "cuda", "interpret": False, "sandbox": "bwrap"},
        "groups": groups,
        "speed": speed,
        "notes": ["register spills: _add_kernel (3 spilled)"]
        if not fail_hidden
        else ["a case of group large: NaN at 1777"],
        "output": "printed in large: n=1048576" if fail_hidden else "hello",
        "elapsed_seconds": 12.5 if fail_hidden else 31.0,
    }


def test_a_hidden_group_changes_nothing_a_student_sees_before_the_deadline(tmp_path):
    rubric = load_rubric(rubric_file(tmp_path))
    before = NOW.replace(year=2029)
    passing, failing = kernel_report(False), kernel_report(True)
    a = views.student_report(passing, P93, rubric, before)
    b = views.student_report(failing, P93, rubric, before)
    for r in (a, b):
        r.pop("elapsed_seconds")
        r["submission"].pop("sha256")
    assert a == b
    assert a["verdict"] == "AC" and a["speed"]["reason"].startswith("shown when every test group is shown")
    assert a["notes"] == [] and "output" not in a and a["speed"].get("speedup") is None
    assert a["hidden_points"] == sum(g.points for g in P93.groups[2:]) + 30 and "1777" not in json.dumps(b)
    # Staff see the difference, and so does the student after the deadline.
    assert views.report_for(TA, {"status": "done", "report": failing, "problem": 93}, rubric)["verdict"] == "WA"
    after_a, after_b = (views.student_report(r, P93, rubric, NOW) for r in (passing, failing))
    assert after_a["verdict"] == "AC" and after_b["verdict"] == "WA" and after_a["speed"]["speedup"] == 1.7
    assert after_a["output"] == "hello" and after_a["notes"] and after_b["speed"]["reason"].startswith("not measured")
    # An extension keeps the student before the deadline.
    extended = views.student_report(failing, P93, rubric, NOW, deadline=NOW.replace(year=2031))
    assert extended["verdict"] == "AC" and extended["deadline_passed"] is False


def test_progress_in_a_hidden_group_or_the_speed_run_is_hidden_tests(tmp_path):
    rubric = load_rubric(rubric_file(tmp_path))
    job = {"problem": 93}
    before = NOW.replace(year=2029)
    seen = [
        views.progress_for(ALICE, job, e, rubric, before)
        for e in (
            {"group": "block-edges", "index": 2, "groups": 5},
            {"group": "large", "index": 5, "groups": 5},
            {"phase": "timing"},
            {"wait": "waiting for the GPU's lock"},
        )
    ]
    assert seen[0] == {"phase": "testing", "group": "block-edges", "index": 2, "groups": 5}
    assert seen[1:] == [views.HIDDEN_PROGRESS] * 3
    assert views.progress_for(TA, job, {"phase": "timing"}, rubric, before) == {"phase": "timing"}
    assert views.progress_for(ALICE, job, {"phase": "timing"}, rubric, NOW) == {"phase": "timing"}


def test_the_leaderboard_ranks_by_what_a_student_is_shown(tmp_path):
    rubric = load_rubric(rubric_file(tmp_path))
    rows = [
        {
            "student": s,
            "problem": 93,
            "sha256": s * 64,
            "report": r,
            "speedup": r["speed"].get("speedup"),
            "graded_at": f"2029-01-01T00:00:0{i}+00:00",
        }
        for i, (s, r) in enumerate((("a", kernel_report(False)), ("b", kernel_report(True))))
    ]
    people = {"a": {"display_name": "Ada", "on_leaderboard": True}}
    before = NOW.replace(year=2029)
    board_a = views.leaderboard(rows, P93, rubric, set(), people, viewer=Identity("a", "student"), now=before)
    board_b = views.leaderboard(rows, P93, rubric, set(), people, viewer=Identity("b", "student"), now=before)
    assert [(e["name"], e["speedup"], e["score"]) for e in board_a] == [("Ada", None, 35.0), ("anonymous", None, 35.0)]
    assert [e["me"] for e in board_a] == [True, False] and [e["me"] for e in board_b] == [False, True]
    assert all("student" not in e for e in board_a + board_b)  # students see no real names
    after = views.leaderboard(rows, P93, rubric, set(), people, viewer=Identity("b", "student"), now=NOW)
    assert [(e["name"], e["speedup"]) for e in after] == [("Ada", 1.7)]  # by everything: b is not accepted
    staff = views.leaderboard(rows, P93, rubric, set(), people, viewer=TA, now=before)
    assert [e["student"] for e in staff] == ["a"]


def test_shown_groups_must_come_before_hidden_ones_in_a_kernel_problem(tmp_path):
    with pytest.raises(RubricError, match="'large' is shown but comes after 'block-edges'"):
        load_rubric(
            rubric_file(
                tmp_path,
                body="[problems.93]\nvisible_before_deadline = ['small-ragged', "
                "'large']\nvisible_after_deadline = 'all'\n",
            )
        )
    # An answers problem checks every part: any subset may be shown.
    load_rubric(rubric_file(tmp_path, body="[problems.101]\nvisible_before_deadline = ['masked_fraction']\n"))


def _ce_101():
    from judge.judging import judge_file
    from judge.options import Options
    from judge.report import finite_json

    path = P101.directory / "submissions" / "compile_error" / "missing_part.toml"
    return finite_json(
        judge_file(P101, path, Options(device="cpu", interpret=True, sandbox="process", seed=1)).to_json()
    )


def test_a_compile_error_has_a_headline_under_a_rubric(tmp_path):
    from judge.grading import gradescope

    rubric = load_rubric(rubric_file(tmp_path))
    report = _ce_101()
    assert report["verdict"] == "CE" and report["message"]
    graded = grade(report, P101, rubric)
    # The service's student report, and `judge grade`'s student reports (the same student view).
    served = views.student_report(report, P101, rubric, NOW.replace(year=2029))
    view = student_view(graded, rubric, NOW.replace(year=2029))
    for message in (served["message"], view["message"]):
        assert message == report["message"] and "missing the answer" in message
    assert served["verdict"] == view["verdict"] == "CE"
    # Gradescope: the headline, and each group's output.
    doc = gradescope.results(graded, 1.0, rubric)
    assert doc["output"].startswith("CE: missing the answer")
    assert all(t["output"] != "CE: " and "missing the answer" in t["output"] for t in doc["tests"])


def test_judge_grade_writes_ce_headlines_into_the_student_reports(tmp_path):
    """`judge grade --rubric`'s reports/STUDENT.json: the CE's message, not a group's empty one."""
    from judge.grading.batch import Plan, export
    from judge.grading.rubric import grade as grade_
    from judge.grading.store import Store

    rubric = load_rubric(rubric_file(tmp_path))
    out = tmp_path / "out"
    store = Store(out / "results.sqlite")
    report = _ce_101()
    store.put("ann", 101, "c" * 64, "101.toml", report, grade_(report, P101, rubric))
    export(
        store,
        Plan(
            entries=[],
            problems=[P101],
            out=out,
            rubric=rubric,
            device="cpu",
            sandbox="process",
            executor=None,
            csv_path=out / "grades.csv",
        ),
    )
    store.close()
    doc = json.loads((out / "reports" / "ann.json").read_text())
    assert doc["problems"][0]["message"].startswith("missing the answer")


# ---------------------------------------------------------------------- CSV cells


NASTY = ['=HYPERLINK("http://x","y")', "+1+1", "-2+3", "@SUM(A1)", "\tcmd", "\rcmd"]


def _cells(text: str) -> list[str]:
    return [c for row in csv.reader(io.StringIO(text)) for c in row]


def test_every_csv_the_judge_writes_goes_through_the_safe_writer():
    root = Path(__file__).resolve().parent.parent / "judge"
    offenders = [
        str(p)
        for p in root.rglob("*.py")
        if p.name != "csv_safe.py" and re.search(r"csv\.(writer|DictWriter)\(", p.read_text())
    ]
    assert offenders == []


def test_the_grades_csv_neutralises_formulas():
    from judge.grading.standings import write_csv_to

    best = {}
    for i, nasty in enumerate(NASTY):
        graded = grade({"verdict": "AC", "groups": [], "mode": {"interpret": True}}, P101, load_rubric(None))
        best[(f"s{i}", 101)] = {
            "graded": graded,
            "path": nasty + ".toml",
            "sha256": "0" * 64,
            "graded_at": "t",
            "speedup": None,
            "score": 1.0,
            "judged_score": 0.5,
            "counts": "best",
            "override": {"reason": nasty, "by": "ta"},
            "deadline": None,
            "late": False,
        }
    buf = io.StringIO()
    write_csv_to(best, buf)
    cells = _cells(buf.getvalue())
    assert not [c for c in cells if c.startswith(("=", "+", "-", "@", "\t", "\r"))]
    assert sum(c.startswith("'") for c in cells) == 2 * len(NASTY)  # each path and each reason


def test_the_tokens_file_neutralises_formulas_and_reads_them_back(tmp_path):
    from judge.service.auth import Auth, new_token, write_tokens

    out = tmp_path / "tokens.csv"
    out.write_text("name,token,role\nann,-starts-with-a-minus-0123,student\n")
    added, _ = write_tokens(["ben"], out)
    assert added == ["ben"]
    text = out.read_text()
    assert "'-starts-with-a-minus-0123" in text and not [c for c in _cells(text) if c.startswith("-")]
    auth = Auth.load(None, out)
    assert auth.identify("-starts-with-a-minus-0123").name == "ann"  # read back as it was given
    assert all(not new_token().startswith("-") for _ in range(200))


def test_an_old_store_is_migrated_and_keeps_working(tmp_path):
    """A store written before the staff's tools (schema of main at 9edee07): opened by this judge, its jobs
    and results are there, a --forward job stays out of regrades, and the new tables work."""
    import sqlite3

    from judge.grading.course_record import CourseRecord
    from judge.grading.standings import best_rows
    from judge.grading.store import SCHEMA_VERSION, Store

    db = sqlite3.connect(tmp_path / "results.sqlite")
    db.executescript((Path(__file__).parent / "data" / "store_schema_v0.sql").read_text())
    now = "2029-01-01T00:00:00.000+00:00"
    report = json.dumps({"verdict": "AC", "groups": [], "mode": {"interpret": True}})
    db.execute(
        "INSERT INTO results VALUES ('ann', 101, 'h1', '101.toml', 'AC', 70, 70, NULL, 1.0, ?, ?)", (report, now)
    )
    for i, (student, sha) in enumerate((("ann", "h1"), ("staff", "h2"))):  # the second: a --forward job
        db.execute(
            "INSERT INTO jobs(id, student, problem, filename, sha256, source, status, attempts, verdict, "
            "report, submitted_at, finished_at) VALUES (?, ?, 101, 'f.toml', ?, x'00', 'done', 1, 'AC', ?, ?, ?)",
            (f"job{i}", student, sha, report, now, now),
        )
    db.commit()
    db.close()
    store = Store(tmp_path / "results.sqlite")
    assert store.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert store.job("job0")["status"] == "done" and store.count() == 1
    assert store.regrade(101, "ta")["jobs"] == 1  # ann's; the --forward job keeps its own seed's result
    CourseRecord(store).override("ann", 101, 50, "by hand", "ta")
    assert best_rows(store, load_rubric(None))[("ann", 101)]["score"] == 50
    store.close()
    Store(tmp_path / "results.sqlite").close()  # opened again: nothing left to migrate
