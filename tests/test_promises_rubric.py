"""The course rubric's promises (judge.grading.rubric), called in-process (tests/test_grading.py checks the same
errors through the command line).

- A grade is the judge's report scored under the rubric: its points per group, RJ and IE score 0.
- A student sees only what the rubric lets them see now: a hidden group keeps its name alone, its points are
  counted apart, and neither the verdict nor the message leaks from it.
- The secret seed never reaches a student: only a per-problem digest of it reaches the judge.
- A wrong rubric is one line (RubricError), never a traceback.
"""

import datetime as dt

import pytest

from judge.grading.rubric import (
    ProblemRubric,
    Rubric,
    RubricError,
    grade,
    load_rubric,
    speed_points,
    student_view,
    visibility,
)
from judge.problems import find_problem

P93 = find_problem("93")  # small-ragged 20, block-edges 15, views 15, extreme-values 10, large 10; speed 30
NAMES = [g.name for g in P93.groups]
UTC = dt.UTC


def _report(verdict, passed, failed_verdict=None, speed=None, mode=None):
    """A judge report of 93 whose groups in PASSED passed; the others failed with FAILED_VERDICT."""
    groups = []
    for name in NAMES:
        ok = name in passed
        groups.append(
            {
                "name": name,
                "passed": ok,
                "verdict": "AC" if ok else (failed_verdict or verdict),
                "skipped": None,
                "failure": None if ok else {"message": f"{name} failed", "case": {"n": 1}},
            }
        )
    return {
        "verdict": verdict,
        "message": "the judge's message",
        "groups": groups,
        "speed": speed or {"scored": False, "points": 0, "max_points": 30},
        "mode": mode or {"device": "cuda", "interpret": False},
        "submission": {"path": "/srv/course/roster/alice/add.py", "sha256": "x"},
        "seed": 99,
    }


# ---------------------------------------------------------------------- grade


def test_a_grade_counts_the_groups_that_passed_at_the_rubrics_points():
    rubric = Rubric(problems={93: ProblemRubric(points={"large": 40.0, "extreme-values": 0.0})})
    graded = grade(_report("WA", {"small-ragged", "large"}), P93, rubric)
    by_name = {g["name"]: g for g in graded["groups"]}
    assert by_name["large"]["points"] == 40 and by_name["large"]["earned"] == 40
    assert by_name["small-ragged"]["earned"] == 20 and by_name["views"]["earned"] == 0
    assert by_name["extreme-values"]["points"] == 0
    assert graded["score"] == 60
    assert graded["max_score"] == 20 + 15 + 15 + 0 + 40 + 30  # on a GPU speed is part of it
    assert graded["verdict"] == "WA" and graded["message"] == "the judge's message"
    assert "seed" not in graded and graded["submission"]["path"] == "add.py"


@pytest.mark.parametrize("verdict", ["RJ", "IE"])
def test_a_rejected_or_internal_error_grade_is_zero_with_groups_and_speed_passed(verdict):
    speed = {"scored": True, "points": 30, "max_points": 30, "speedup": 1.2}
    graded = grade(_report(verdict, set(NAMES), speed=speed), P93, Rubric())
    assert graded["score"] == 0 and graded["speed"]["points"] == 0
    assert all(g["earned"] == 0 and g["passed"] for g in graded["groups"])
    assert graded["max_score"] == 100


@pytest.mark.parametrize("verdict", ["WA", "TLE", "CE"])
def test_other_verdicts_keep_what_passed(verdict):
    graded = grade(_report(verdict, {"small-ragged", "block-edges"}), P93, Rubric())
    assert graded["score"] == 35


def test_a_group_missing_from_the_report_has_the_reports_verdict_and_earns_nothing():
    report = _report("CE", set())
    report["groups"] = []  # the file never loaded
    graded = grade(report, P93, Rubric())
    assert [g["verdict"] for g in graded["groups"]] == ["CE"] * 5 and graded["score"] == 0
    assert grade({}, P93, Rubric())["verdict"] == "IE"


def test_an_interpreter_or_quick_run_has_no_speed_in_its_maximum_unless_the_rubric_gives_it():
    done = set(NAMES)
    interp = grade(_report("AC", done, mode={"device": "cpu", "interpret": True}), P93, Rubric())
    assert interp["max_score"] == 70 and interp["score"] == 70
    quick = grade(_report("AC", done, mode={"device": "cuda", "interpret": False, "quick": True}), P93, Rubric())
    assert quick["max_score"] == 70
    given = Rubric(problems={93: ProblemRubric(speed={"max_points": 20})})
    assert grade(_report("AC", done, mode={"device": "cpu", "interpret": True}), P93, given)["max_score"] == 90


# ---------------------------------------------------------------------- speed under the rubric


CURVE = ProblemRubric(speed={"max_points": 40, "curve": [[0.5, 0.0], [1.0, 0.5], [2.0, 1.0]]})


@pytest.mark.parametrize(
    "speedup,points", [(0.1, 0.0), (0.5, 0.0), (0.75, 10.0), (1.0, 20.0), (1.5, 30.0), (2.0, 40.0), (5.0, 40.0)]
)
def test_the_curve_maps_the_reported_speedup_piecewise_linearly_and_flat_outside(speedup, points):
    speed = {"scored": True, "speedup": speedup, "points": 3, "max_points": 30}
    assert speed_points(CURVE, speed, P93) == (points, 40.0)


def test_a_curve_that_starts_above_zero_gives_its_first_fraction_below_it():
    pr = ProblemRubric(speed={"max_points": 10, "curve": [[1.0, 0.2], [2.0, 0.6]]})
    assert speed_points(pr, {"scored": True, "speedup": 0.3}, P93) == (2.0, 10.0)
    assert speed_points(pr, {"scored": True, "speedup": 3.0}, P93) == (6.0, 10.0)


def test_without_a_curve_the_reports_points_are_rescaled():
    speed = {"scored": True, "points": 15, "max_points": 30, "speedup": 0.7}
    assert speed_points(ProblemRubric(speed={"max_points": 10}), speed, P93) == (5.0, 10.0)
    assert speed_points(ProblemRubric(), speed, P93) == (15.0, 30.0)
    assert speed_points(ProblemRubric(), {**speed, "max_points": 0}, P93) == (0.0, 0.0)


def test_unscored_speed_earns_nothing():
    assert speed_points(CURVE, {"scored": False, "speedup": 2.0, "points": 30}, P93) == (0.0, 40.0)
    assert speed_points(ProblemRubric(), {"scored": False}, P93) == (0.0, 30.0)
    assert speed_points(ProblemRubric(), {"scored": False}, P93, measurable=False) == (0.0, 0.0)


# ---------------------------------------------------------------------- what a student sees

BEFORE = dt.datetime(2026, 12, 1, tzinfo=UTC)
DEADLINE = dt.datetime(2026, 12, 15, 23, 59, tzinfo=UTC)
AFTER = dt.datetime(2026, 12, 16, tzinfo=UTC)
HIDING = Rubric(
    deadline=DEADLINE,
    problems={
        93: ProblemRubric(
            visible_before=["small-ragged", "block-edges"], visible_after=["small-ragged", "block-edges", "views"]
        )
    },
)


def test_visibility_in_gradescopes_words():
    pr = HIDING.problems[93]
    assert [visibility(pr, n) for n in NAMES] == ["visible", "visible", "after_due_date", "hidden", "hidden"]
    assert {visibility(ProblemRubric(), n) for n in NAMES} == {"visible"}


def test_a_student_sees_hidden_groups_by_name_only_and_their_points_apart():
    graded = grade(_report("TLE", {"small-ragged"}, failed_verdict="WA"), P93, HIDING)
    graded["groups"][4]["verdict"] = "TLE"  # the hidden "large" group hung
    before = student_view(graded, HIDING, now=BEFORE)
    shown = {g["name"]: g for g in before["groups"]}
    assert set(shown) == set(NAMES)
    for name in ("views", "extreme-values", "large"):
        assert shown[name].get("hidden") is True and set(shown[name]) == {"name", "hidden", "about"}
    assert shown["views"]["about"] == "results shown after the deadline" and shown["large"]["about"] == "hidden"
    # While a group is hidden the speed part is withheld too: its points count with the hidden ones.
    assert before["hidden_points"] == 15 + 10 + 10 + 30 and before["speed"]["withheld"]
    assert before["score"] == 20 and before["max_score"] == 20 + 15 and not before["all_shown"]
    # The verdict and message come from what is shown, not from the hidden group that hung.
    assert before["verdict"] == "WA" and before["message"] == "block-edges: block-edges failed"
    assert "large failed" not in str(before) and "TLE" not in str(before)
    after = student_view(graded, HIDING, now=AFTER)
    assert not {g["name"]: g for g in after["groups"]}["views"].get("hidden")
    assert after["hidden_points"] == 20 + 30 and after["max_score"] == 20 + 15 + 15


def test_when_only_passing_groups_are_shown_the_student_is_told_they_passed():
    graded = grade(_report("WA", {"small-ragged", "block-edges"}), P93, HIDING)
    view = student_view(graded, HIDING, now=BEFORE)
    assert view["verdict"] == "AC" and view["message"] == "all shown tests passed"


@pytest.mark.parametrize("verdict", ["WA", "TLE", "RTE"])
def test_a_speed_runs_failure_tells_nothing_while_a_group_is_hidden_and_is_shown_when_all_are(verdict):
    # Every group passed; the speed run then failed the file. It runs only when every group passes, so while a
    # group is hidden its failure would tell that the hidden groups passed: the student is told over the shown
    # groups. Once every group is shown, the verdict and the judge's message are shown as they are.
    report = _report(verdict, set(NAMES), speed={"scored": True, "points": 0, "max_points": 30, "verdict": verdict})
    report["message"] = "speed run: at bench shape n=4096: out: 3 of 4096 elements wrong"
    later = Rubric(deadline=DEADLINE, problems={93: ProblemRubric(visible_before=["small-ragged"])})
    for rubric, now in ((HIDING, BEFORE), (HIDING, AFTER), (later, BEFORE)):
        view = student_view(grade(report, P93, rubric), rubric, now=now)
        assert view["verdict"] == "AC" and view["message"] == "all shown tests passed", view
        assert view["speed"]["withheld"] and not view["all_shown"]
    view = student_view(grade(report, P93, later), later, now=AFTER)
    assert view["all_shown"] and view["verdict"] == verdict and view["message"] == report["message"], view


@pytest.mark.parametrize("verdict", ["CE", "RJ", "IE"])
def test_a_verdict_about_the_whole_file_is_shown_as_it_is(verdict):
    report = _report(verdict, set())
    report["groups"] = []  # decided before any group ran (a compile error, the scan's refusal, the judge failing)
    view = student_view(grade(report, P93, HIDING), HIDING, now=BEFORE)
    assert view["verdict"] == verdict and view["message"] == "the judge's message"


def test_nothing_hidden_shows_the_judges_own_message():
    rubric = Rubric()
    graded = grade(_report("WA", {"small-ragged"}), P93, rubric)
    view = student_view(graded, rubric)
    assert view["message"] == "the judge's message" and view["hidden_points"] == 0 and view["verdict"] == "WA"
    assert view["score"] == 20 and view["max_score"] == 100


def test_the_deadline_passes_at_its_minute():
    assert not HIDING.past_deadline(DEADLINE - dt.timedelta(seconds=1))
    assert HIDING.past_deadline(DEADLINE)
    assert Rubric().past_deadline(BEFORE)  # no deadline: everything visible after it is visible now


# ---------------------------------------------------------------------- the secret seed


def test_the_graded_seed_is_a_per_problem_digest_of_the_secret():
    a = Rubric(secret_seed="correct horse battery")
    b = Rubric(secret_seed="correct horse battery staple")
    p94 = find_problem("94")
    assert a.seed_for(P93) == a.seed_for(P93)  # the same for every student
    assert a.seed_for(P93) != a.seed_for(p94) and a.seed_for(P93) != b.seed_for(P93)
    assert 0 <= a.seed_for(P93) < 2**31
    assert Rubric().seed_for(P93) is None
    assert "correct horse" not in repr(a)


# ---------------------------------------------------------------------- a wrong rubric: one line


ORDER = (
    "a failure there can stop the later groups, which would show it; show the groups in the problem's "
    "order (small-ragged, block-edges, views, extreme-values, large)"
)
CURVE_WORDS = (
    " [problems.93].speed.curve: must be [[speedup, fraction], ...] with increasing speedups and fractions in [0, 1]"
)
GROUPS = "valid: small-ragged, block-edges, views, extreme-values, large"


# (the rubric's text, its one line after the file's path: written out, since the line is what the staff read;
# "..." at the end: the rest is the TOML parser's)
@pytest.mark.parametrize(
    "text,line",
    [
        (
            "colour = 1\nflavour = 2\n",
            ": unknown key(s) colour, flavour; valid: deadline, problems, secret_seed, secret_seed_env",
        ),
        (
            "deadline = 2026-01-01T00:00:00\n",
            ": deadline must be a TOML date-time with a time zone, e.g. 2026-12-15T23:59:00Z",
        ),
        ("deadline = 'tomorrow'\n", ": deadline must be a TOML date-time with a time zone, e.g. 2026-12-15T23:59:00Z"),
        ("secret_seed = 'seven77'\n", ": the secret seed must be at least 8 characters (it must not be guessable)"),
        ("secret_seed = 'long enough'\nsecret_seed_env = 'X'\n", ": give secret_seed or secret_seed_env, not both"),
        (
            "secret_seed_env = 'JUDGE_TEST_SURELY_UNSET_SECRET'\n",
            ": secret_seed_env names $JUDGE_TEST_SURELY_UNSET_SECRET, which is not set",
        ),
        ("problems = 3\n", ": [problems] must be a table of [problems.ID] tables"),
        ("[problems.999]\n", ": [problems.999]: unknown problem"),
        ("[problems]\n93 = 1\n", " [problems.93]: must be a table"),
        (
            "[problems.93]\nbonus = 1\nextra = 2\n",
            " [problems.93]: unknown key(s) bonus, extra; valid: points, speed, visible_after_deadline, "
            "visible_before_deadline",
        ),
        ("[problems.93]\npoints = 5\n", " [problems.93]: points must be a table of group = points"),
        ("[problems.93]\npoints = { nope = 3 }\n", " [problems.93].points: unknown group 'nope'; " + GROUPS),
        ("[problems.93]\npoints = { large = -1 }\n", " [problems.93].points.large: must be a number >= 0"),
        ("[problems.93]\npoints = { large = true }\n", " [problems.93].points.large: must be a number >= 0"),
        ("[problems.93]\npoints = { large = 'ten' }\n", " [problems.93].points.large: must be a number >= 0"),
        (
            "[problems.93]\nvisible_before_deadline = 'some'\n",
            ' [problems.93].visible_before_deadline: must be a list of group names or "all"',
        ),
        (
            "[problems.93]\nvisible_before_deadline = [1]\n",
            ' [problems.93].visible_before_deadline: must be a list of group names or "all"',
        ),
        (
            "[problems.93]\nvisible_after_deadline = ['nope']\n",
            " [problems.93].visible_after_deadline: unknown group 'nope'; " + GROUPS,
        ),
        (
            "[problems.93]\nvisible_before_deadline = ['large', 'views']\nvisible_after_deadline = ['small-ragged']\n",
            " [problems.93]: group(s) large, views visible before the deadline must stay visible after it",
        ),
        (
            "[problems.93]\nvisible_before_deadline = ['small-ragged', 'views']\n",
            " [problems.93].visible_before_deadline: 'views' is shown but comes after 'block-edges', which is not: "
            + ORDER,
        ),
        (
            "[problems.93]\nvisible_before_deadline = ['small-ragged']\nvisible_after_deadline = ['small-ragged', 'large']\n",
            " [problems.93].visible_after_deadline: 'large' is shown but comes after 'block-edges', which is not: "
            + ORDER,
        ),
        ("[problems.93]\nspeed = 1\n", " [problems.93].speed: must be a table"),
        ("[problems.93.speed]\nmax_points = -5\n", " [problems.93].speed.max_points: must be a number >= 0"),
        ("[problems.93.speed]\nmax_points = 'all'\n", " [problems.93].speed.max_points: must be a number >= 0"),
        ("[problems.93.speed]\ncurve = [[1.0, 0.5]]\n", CURVE_WORDS),
        ("[problems.93.speed]\ncurve = [[2.0, 1.0], [1.0, 0.5]]\n", CURVE_WORDS),
        ("[problems.93.speed]\ncurve = [[2.0, 0.0], [1.0, 0.5]]\n", CURVE_WORDS),
        ("[problems.93.speed]\ncurve = [[1.0, 1.0], [1.0, 0.5]]\n", CURVE_WORDS),
        ("[problems.93.speed]\ncurve = [[0.5, 0.0], [1.0, 1.5]]\n", CURVE_WORDS),
        ("[problems.93.speed]\ncurve = [[0.5, -0.1], [1.0, 1.0]]\n", CURVE_WORDS),
        ("[problems.93.speed]\ncurve = [[0.5, 0.0, 1.0], [1.0, 1.0]]\n", CURVE_WORDS),
        ("[problems.93.speed]\ncurve = [[0.5, 'x'], [1.0, 1.0]]\n", CURVE_WORDS),
        ("[problems.93.speed]\ncurve = 'steep'\n", CURVE_WORDS),
        ("not toml = = =\n", ": not valid TOML: ..."),
    ],
)
def test_a_wrong_rubric_is_one_line(tmp_path, monkeypatch, text, line):
    monkeypatch.delenv("JUDGE_TEST_SURELY_UNSET_SECRET", raising=False)
    path = tmp_path / "rubric.toml"
    path.write_text(text)
    with pytest.raises(RubricError) as exc:
        load_rubric(path)
    message = str(exc.value)
    assert "\n" not in message
    if line.endswith("..."):
        assert message.startswith(f"{path}{line[:-3]}"), message
    else:
        assert message == f"{path}{line}"


def test_a_secret_of_eight_characters_is_long_enough(tmp_path):
    path = tmp_path / "rubric.toml"
    path.write_text("secret_seed = 'eight888'\n")
    rubric = load_rubric(path)
    assert rubric.secret_seed == "eight888" and rubric.problems == {} and rubric.source == str(path)


def test_a_missing_rubric_file_is_one_line(tmp_path):
    with pytest.raises(RubricError, match="cannot read the rubric"):
        load_rubric(tmp_path / "nope.toml")


def test_a_good_rubric_loads_every_key(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_SECRET_FOR_TEST", "a secret long enough")
    path = tmp_path / "rubric.toml"
    path.write_text(
        "deadline = 2026-12-15T23:59:00Z\nsecret_seed_env = 'COURSE_SECRET_FOR_TEST'\n"
        "[problems.vector-add]\npoints = { large = 25, views = 0 }\n"
        "visible_before_deadline = ['small-ragged']\nvisible_after_deadline = 'all'\n"
        "[problems.vector-add.speed]\nmax_points = 0\ncurve = [[0.5, 0.0], [1.0, 1.0]]\n"
    )
    rubric = load_rubric(path)
    assert rubric.deadline == DEADLINE and rubric.secret_seed == "a secret long enough"
    pr = rubric.for_problem(P93)
    assert pr.points == {"large": 25.0, "views": 0.0}
    assert pr.visible_before == ["small-ragged"] and pr.visible_after == NAMES
    assert pr.speed == {"max_points": 0, "curve": [[0.5, 0.0], [1.0, 1.0]]}
    assert rubric.for_problem(find_problem("94")) == ProblemRubric()
    assert load_rubric(None) == Rubric()


def test_a_students_view_carries_the_problem_speed_and_file_and_rounds_to_hundredths():
    rubric = Rubric(
        problems={
            93: ProblemRubric(
                points={"small-ragged": 1 / 3, "block-edges": 1 / 3, "large": 1 / 3},
                visible_before=["small-ragged", "block-edges"],
            )
        },
        deadline=DEADLINE,
    )
    speed = {"scored": True, "points": 10 / 3, "max_points": 30, "speedup": 0.6}
    graded = grade(_report("AC", set(NAMES), speed=speed), P93, rubric)
    view = student_view(graded, rubric, now=AFTER)  # every group is shown after the deadline
    assert view["problem"] == {"id": 93, "slug": "vector-add", "title": "Vector addition"}
    assert view["speed"] == graded["speed"] and view["submission"]["path"] == "add.py" and view["all_shown"]
    assert view["score"] == 29.33 and view["max_score"] == 56.0 and view["verdict"] == "AC"
    before = student_view(graded, rubric, now=BEFORE)  # two groups shown, the speed part withheld
    assert before["score"] == 0.67 and before["max_score"] == 0.67 and before["hidden_points"] == 55.33


def test_a_shown_failure_without_a_message_is_told_by_its_verdicts_meaning():
    graded = grade(_report("WA", {"small-ragged"}), P93, HIDING)
    graded["groups"][1]["failure"] = {"case": {"n": 3}}
    assert student_view(graded, HIDING, now=BEFORE)["message"] == "wrong answer"


def test_a_grade_and_a_students_view_in_full():
    """Every field of a grade and of what a student sees, for one report, written out."""
    report = _report(
        "WA",
        {"small-ragged", "block-edges"},
        speed={"scored": False, "points": 0, "max_points": 30, "reason": "not every group passed"},
    )
    report["groups"][3]["skipped"] = "not run: an earlier group ended with TLE"
    report.update(details={"error": "x"}, elapsed_seconds=3.5, notes=["a note"])
    about = {g.name: g.about for g in P93.groups}
    vis = ["visible", "visible", "after_due_date", "hidden", "hidden"]
    graded = grade(report, P93, HIDING)
    assert graded == {
        "problem": {"id": 93, "slug": "vector-add", "title": "Vector addition"},
        "verdict": "WA",
        "message": "the judge's message",
        "details": {"error": "x"},
        "score": 35.0,
        "max_score": 100.0,
        "groups": [
            {
                "name": n,
                "about": about[n],
                "points": p,
                "earned": p if i < 2 else 0.0,
                "passed": i < 2,
                "verdict": "AC" if i < 2 else "WA",
                "skipped": "not run: an earlier group ended with TLE" if n == "extreme-values" else None,
                "failure": None if i < 2 else {"message": f"{n} failed", "case": {"n": 1}},
                "visibility": vis[i],
            }
            for i, (n, p) in enumerate(zip(NAMES, (20.0, 15.0, 15.0, 10.0, 10.0)))
        ],
        "speed": {
            "scored": False,
            "points": 0.0,
            "max_points": 30.0,
            "speedup": None,
            "reason": "not every group passed",
        },
        "submission": {"path": "add.py", "sha256": "x"},
        "elapsed_seconds": 3.5,
        "notes": ["a note"],
    }
    view = student_view(graded, HIDING, now=BEFORE)
    assert view == {
        "problem": {"id": 93, "slug": "vector-add", "title": "Vector addition"},
        "verdict": "AC",
        "message": "all shown tests passed",
        "score": 35.0,
        "max_score": 35.0,
        "hidden_points": 65.0,
        "groups": [
            {k: g[k] for k in ("name", "about", "points", "earned", "passed", "verdict", "skipped", "failure")}
            for g in graded["groups"][:2]
        ]
        + [
            {"name": "views", "hidden": True, "about": "results shown after the deadline"},
            {"name": "extreme-values", "hidden": True, "about": "hidden"},
            {"name": "large", "hidden": True, "about": "hidden"},
        ],
        "speed": {
            "scored": False,
            "points": 0.0,
            "max_points": 0.0,
            "speedup": None,
            "withheld": True,
            "reason": "shown when every test group is shown (the speed run happens only when all of them pass)",
        },
        "submission": {"path": "add.py", "sha256": "x"},
        "all_shown": False,
    }


def test_an_accepted_grade_adds_the_speed_points():
    speed = {"scored": True, "points": 21.5, "max_points": 30, "speedup": 0.85, "reason": "0.85x"}
    graded = grade(_report("AC", set(NAMES), speed=speed), P93, Rubric())
    assert graded["score"] == 70 + 21.5 and graded["max_score"] == 100
    assert graded["speed"] == {"scored": True, "points": 21.5, "max_points": 30.0, "speedup": 0.85, "reason": "0.85x"}


def test_the_graded_seed_is_derived_as_documented_and_stays_the_same_across_versions():
    from judge.cases import derive_seed

    rubric = Rubric(secret_seed="correct horse battery")
    assert rubric.seed_for(P93) == derive_seed("graded-run", "correct horse battery", 93) >> 1
    assert rubric.seed_for(P93) == 287524051  # a course that regrades later gets the same cases


def test_the_deadline_is_read_against_the_clock_when_no_time_is_given():
    assert Rubric(deadline=dt.datetime(2000, 1, 1, tzinfo=UTC)).past_deadline() is True
    assert Rubric(deadline=dt.datetime(2999, 1, 1, tzinfo=UTC)).past_deadline() is False


def test_a_report_without_a_file_path_keeps_none():
    report = _report("AC", set(NAMES))
    report["submission"] = {"path": None, "sha256": "x"}
    assert grade(report, P93, Rubric())["submission"] == {"path": None, "sha256": "x"}
    report["submission"] = {"sha256": "x"}
    assert grade(report, P93, Rubric())["submission"] == {"path": None, "sha256": "x"}


def test_speed_points_without_a_curve_round_to_hundredths_and_count_missing_points_as_none():
    pr = ProblemRubric(speed={"max_points": 7})
    assert speed_points(pr, {"scored": True, "points": 10, "max_points": 30}, P93) == (2.33, 7.0)
    assert speed_points(pr, {"scored": True, "points": 0, "max_points": 30}, P93) == (0.0, 7.0)
    assert speed_points(pr, {"scored": True, "max_points": 30}, P93) == (0.0, 7.0)
    curve = ProblemRubric(speed={"max_points": 7, "curve": [[0.0, 0.0], [3.0, 1.0]]})
    assert speed_points(curve, {"scored": True, "speedup": 1.0}, P93) == (2.33, 7.0)


def test_groups_visible_before_the_deadline_and_more_after_it_load(tmp_path):
    path = tmp_path / "rubric.toml"
    path.write_text(
        "[problems.93]\nvisible_before_deadline = ['small-ragged']\n"
        "visible_after_deadline = ['small-ragged', 'block-edges', 'views']\n"
    )
    pr = load_rubric(path).for_problem(P93)
    assert pr.visible_before == ["small-ragged"] and pr.visible_after == ["small-ragged", "block-edges", "views"]
    assert [visibility(pr, n) for n in NAMES] == ["visible", "after_due_date", "after_due_date", "hidden", "hidden"]


@pytest.mark.parametrize("verdict", ["RJ", "IE"])
def test_a_whole_file_verdict_from_a_hidden_group_is_shown_without_its_message(verdict):
    # The hidden "large" group was rejected: the file scores 0 and the student sees why in a word, not the hidden
    # group's name or case.
    report = _report(verdict, {"small-ragged", "block-edges", "views", "extreme-values"})
    graded = grade(report, P93, HIDING)
    view = student_view(graded, HIDING, now=BEFORE)
    meaning = {"RJ": "rejected (rule violation)", "IE": "internal error of the judge"}[verdict]
    assert view["verdict"] == verdict and view["score"] == 0
    assert view["message"] == f"{meaning}, in a test whose results are shown after the deadline"
    assert "large" not in view["message"] and "large failed" not in str(view)


def test_a_rejection_after_groups_ran_is_told_by_the_shown_groups_own_failures():
    # No group passed, but the groups ran (each has a failure of its own): not a verdict about the whole file
    # decided before them, so the message is a shown group's, not the judge's (which could name a hidden one).
    report = _report("RJ", set())
    report["message"] = "large: the judge's message about a hidden group"
    view = student_view(grade(report, P93, HIDING), HIDING, now=BEFORE)
    assert view["verdict"] == "RJ" and view["message"] == "small-ragged: small-ragged failed", view


def test_groups_of_a_problem_answered_by_hand_may_be_shown_in_any_order(tmp_path):
    # Only a kernel's run stops at a failed group; the groups of an answers problem are all marked.
    path = tmp_path / "rubric.toml"
    path.write_text("[problems.101]\nvisible_before_deadline = ['oob_bytes']\n")
    pr = load_rubric(path).for_problem(find_problem("101"))
    assert pr.visible_before == ["oob_bytes"] and pr.visible_after is None


def test_a_compile_error_is_shown_when_every_group_is_hidden():
    everything_hidden = Rubric(deadline=DEADLINE, problems={93: ProblemRubric(visible_before=[], visible_after=[])})
    report = _report("CE", set())
    report["groups"] = []  # the file never loaded: no group ran
    graded = grade(report, P93, everything_hidden)
    view = student_view(graded, everything_hidden, now=BEFORE)
    assert view["verdict"] == "CE" and view["message"] == "the judge's message" and view["max_score"] == 0


def test_the_message_is_the_shown_failure_of_the_verdict_shown():
    rubric = Rubric(deadline=DEADLINE, problems={93: ProblemRubric(visible_before=NAMES[:4])})
    report = _report("TLE", {"small-ragged"}, failed_verdict="WA")
    report["groups"][2]["verdict"] = "TLE"  # views hung; block-edges and extreme-values were wrong
    graded = grade(report, P93, rubric)
    view = student_view(graded, rubric, now=BEFORE)
    assert view["verdict"] == "TLE" and view["message"] == "views: views failed"


def test_grades_and_views_round_to_hundredths():
    rubric = Rubric(
        problems={
            93: ProblemRubric(
                points={"small-ragged": 1 / 3, "block-edges": 0, "views": 0, "extreme-values": 0, "large": 0},
                speed={"max_points": 1 / 7},
            )
        }
    )
    speed = {"scored": True, "points": 30, "max_points": 30, "speedup": 1.2}
    graded = grade(_report("AC", set(NAMES), speed=speed), P93, rubric)
    assert graded["speed"]["points"] == 0.14  # 1/7, rounded first
    assert graded["score"] == 0.47 and graded["max_score"] == 0.48  # 1/3 + 0.14, and 1/3 + 1/7
    view = student_view(graded, rubric)
    assert view["score"] == 0.47 and view["max_score"] == 0.48


def test_a_report_without_a_message_grades_with_an_empty_one():
    report = _report("AC", set(NAMES))
    del report["message"]
    assert grade(report, P93, Rubric())["message"] == ""
