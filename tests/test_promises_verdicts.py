"""The verdict's promises, written against the README's words rather than the code's tables.

"When several groups fail differently, the verdict is the most serious, in the order IE, RJ, CE, TLE, MLE, OLE,
RTE, WA." "After a group ends in TLE, MLE or OLE the later (larger) groups are skipped" (and after RJ: its score
is 0 whatever follows). "RJ and IE score 0." Each expectation below is written out by hand, so that a change to
judge.verdicts' tables (a swapped priority, a verdict that no longer stops the later groups, a rejected file that
keeps its points) fails here.
"""

import itertools

import pytest

from judge.verdicts import GroupResult, Report, Verdict, worst

AC, WA, RTE, TLE, MLE, OLE, CE, RJ, IE = (
    Verdict.AC,
    Verdict.WA,
    Verdict.RTE,
    Verdict.TLE,
    Verdict.MLE,
    Verdict.OLE,
    Verdict.CE,
    Verdict.RJ,
    Verdict.IE,
)

# Every pair of distinct verdicts and the one that wins, by hand (IE > RJ > CE > TLE > MLE > OLE > RTE > WA > AC).
PAIRS = [
    (AC, WA, WA),
    (AC, RTE, RTE),
    (AC, TLE, TLE),
    (AC, MLE, MLE),
    (AC, OLE, OLE),
    (AC, CE, CE),
    (AC, RJ, RJ),
    (AC, IE, IE),
    (WA, RTE, RTE),
    (WA, TLE, TLE),
    (WA, MLE, MLE),
    (WA, OLE, OLE),
    (WA, CE, CE),
    (WA, RJ, RJ),
    (WA, IE, IE),
    (RTE, TLE, TLE),
    (RTE, MLE, MLE),
    (RTE, OLE, OLE),
    (RTE, CE, CE),
    (RTE, RJ, RJ),
    (RTE, IE, IE),
    (TLE, MLE, TLE),
    (TLE, OLE, TLE),
    (TLE, CE, CE),
    (TLE, RJ, RJ),
    (TLE, IE, IE),
    (MLE, OLE, MLE),
    (MLE, CE, CE),
    (MLE, RJ, RJ),
    (MLE, IE, IE),
    (OLE, CE, CE),
    (OLE, RJ, RJ),
    (OLE, IE, IE),
    (CE, RJ, RJ),
    (CE, IE, IE),
    (RJ, IE, IE),
]


def test_the_table_names_every_pair_once():
    # (this checks the table above, not the judge: a verdict added to the enum needs its rows)
    assert {frozenset(p[:2]) for p in PAIRS} == {frozenset(p) for p in itertools.combinations(Verdict, 2)}


@pytest.mark.parametrize("a,b,expected", PAIRS, ids=[f"{a.value}-{b.value}" for a, b, _ in PAIRS])
def test_worst_of_a_pair_is_the_more_serious_in_either_order(a, b, expected):
    assert worst([a, b]) is expected
    assert worst([b, a]) is expected
    assert worst([a, b, a, b]) is expected  # repeats change nothing


@pytest.mark.parametrize("v", list(Verdict), ids=lambda v: v.value)
def test_worst_of_one_verdict_is_itself(v):
    assert worst([v]) is v
    assert worst(iter([v, v])) is v  # any iterable, consumed once


def test_worst_of_nothing_is_accepted():
    assert worst([]) is AC


def test_worst_of_many_is_the_most_serious():
    assert worst([WA, RTE, OLE, MLE]) is MLE
    assert worst([WA, RTE, OLE, MLE, TLE]) is TLE
    assert worst([WA, TLE, CE]) is CE
    assert worst(v for v in (WA, RTE, RJ, CE)) is RJ
    assert worst(list(Verdict)) is IE


# After a group ends with one of these, the later groups are not run (README: TLE, MLE, OLE; and RJ, whose score is
# 0 whatever follows). WA, RTE and CE do not stop them: a wrong answer on small inputs still shows what else fails.
STOPS = {AC: False, WA: False, RTE: False, TLE: True, MLE: True, OLE: True, CE: False, RJ: True, IE: False}


@pytest.mark.parametrize("v", list(Verdict), ids=lambda v: v.value)
def test_which_verdicts_stop_the_later_groups(v):
    assert v.stops_later_groups is STOPS[v]


# ---------------------------------------------------------------------- the score


def _report(verdict, groups, speed=None):
    return Report(
        problem={"id": 93},
        submission={},
        mode={"device": "cuda", "interpret": False},
        seed=0,
        verdict=verdict,
        message="",
        groups=groups,
        notes=[],
        max_score=100.0,
        speed=speed or {"scored": False, "points": 0, "max_points": 30},
        elapsed_seconds=0.0,
    )


def _groups(*passed):
    points = (20, 15, 15, 10, 10)
    return [GroupResult(f"g{i}", "", points[i], ok, 1, AC if ok else WA) for i, ok in enumerate(passed)]


@pytest.mark.parametrize("verdict", [RJ, IE])
def test_a_rejected_or_internal_error_run_scores_zero_with_groups_passed(verdict):
    groups = _groups(True, True, False, False)
    groups[2].verdict = verdict
    report = _report(verdict, groups)
    assert report.score == 0
    assert report.to_json()["score"] == 0
    # ... even when every group passed and speed was scored (a rule broken in the speed run is RJ).
    report = _report(verdict, _groups(True, True, True), {"scored": True, "points": 30, "max_points": 30})
    assert report.score == 0


@pytest.mark.parametrize("verdict", [WA, RTE, TLE, MLE, OLE])
def test_other_failures_keep_the_points_of_the_groups_that_passed(verdict):
    groups = _groups(True, True, False, False, False)
    for g in groups[2:]:
        g.verdict = verdict
    report = _report(verdict, groups)
    assert report.score == 35
    assert report.to_json()["score"] == 35
    assert [g["earned"] for g in report.to_json()["groups"]] == [20, 15, 0, 0, 0]


def test_a_run_with_no_group_judged_scores_zero():
    # CE before any test: the file never loaded, no group ran.
    assert _report(CE, []).score == 0


def test_speed_points_count_only_when_every_group_passed():
    speed = {"scored": True, "points": 12.5, "max_points": 30}
    assert _report(AC, _groups(True, True, True), speed).score == 50 + 12.5
    assert _report(WA, _groups(True, False, True), speed).score == 35
    assert _report(AC, _groups(True, True, True), {**speed, "scored": False}).score == 50


def test_the_score_is_rounded_to_hundredths():
    groups = [GroupResult("a", "", 1 / 3, True, 1), GroupResult("b", "", 1 / 3, True, 1)]
    assert _report(AC, groups).score == 0.67


def test_the_attainable_maximum_leaves_out_speed_only_where_speed_cannot_be_measured():
    groups = _groups(True, True, True, True, True)  # 70 points
    on_gpu = _report(WA, groups)
    assert on_gpu.attainable_score == 100 and on_gpu.max_score_note == ""
    interpreted = _report(AC, groups)
    interpreted.mode = {"device": "cpu", "interpret": True}
    assert interpreted.attainable_score == 70
    assert "interpreter" in interpreted.max_score_note
    quick = _report(AC, groups)
    quick.mode = {"device": "cuda", "interpret": False, "quick": True}
    assert quick.attainable_score == 70 and "quick test" in quick.max_score_note


def test_the_reports_json_in_full():
    """Every key of the report's JSON (README: "The report"), for one passed group and one failed."""
    groups = [
        GroupResult("small", "n from 1", 20, True, 3),
        GroupResult(
            "views",
            "strided",
            15,
            False,
            2,
            WA,
            case={"n": 7},
            message="out: 1 of 7 elements wrong",
            details={"pattern": "elements 3 of 7"},
            repro="python -m judge test 93 add.py --group views",
            skipped="",
        ),
    ]
    report = Report(
        problem={"id": 93, "slug": "vector-add"},
        submission={"path": "add.py", "sha256": "s"},
        mode={"device": "cuda", "interpret": False},
        seed=12,
        verdict=WA,
        message="views: out: wrong",
        groups=groups,
        notes=["n1"],
        max_score=100.0,
        speed={"scored": False, "points": 0, "max_points": 30, "reason": "no speed points"},
        elapsed_seconds=1.23456,
        worker={"versions": {"torch": "x"}},
        output="printed",
        details={"d": 1},
        timing={"cases": 5},
    )
    assert report.to_json() == {
        "version": 1,
        "verdict": "WA",
        "verdict_meaning": "wrong answer",
        "score": 20.0,
        "max_score": 65.0,
        "full_score": 100.0,
        "max_score_note": "only some of the test groups ran",  # 35 + 30
        "message": "views: out: wrong",
        "details": {"d": 1},
        "problem": {"id": 93, "slug": "vector-add"},
        "submission": {"path": "add.py", "sha256": "s"},
        "mode": {"device": "cuda", "interpret": False},
        "seed": 12,
        "groups": [
            {
                "name": "small",
                "about": "n from 1",
                "points": 20,
                "earned": 20,
                "passed": True,
                "verdict": "AC",
                "cases_run": 3,
                "skipped": None,
                "failure": None,
            },
            {
                "name": "views",
                "about": "strided",
                "points": 15,
                "earned": 0.0,
                "passed": False,
                "verdict": "WA",
                "cases_run": 2,
                "skipped": None,
                "failure": {
                    "case": {"n": 7},
                    "message": "out: 1 of 7 elements wrong",
                    "details": {"pattern": "elements 3 of 7"},
                    "reproduce": "python -m judge test 93 add.py --group views",
                },
            },
        ],
        "speed": {"scored": False, "points": 0, "max_points": 30, "reason": "no speed points"},
        "timing": {"cases": 5},
        "notes": ["n1"],
        "worker": {"versions": {"torch": "x"}},
        "output": "printed",
        "elapsed_seconds": 1.235,
    }
    skipped = GroupResult("large", "big", 10, False, 0, TLE, skipped="not run: an earlier group ended with TLE")
    assert _report(TLE, [skipped]).to_json()["groups"][0]["skipped"] == "not run: an earlier group ended with TLE"


@pytest.mark.parametrize(
    "v,meaning,folder",
    [
        (AC, "accepted", "accepted"),
        (WA, "wrong answer", "wrong_answer"),
        (RTE, "run-time error", "runtime_error"),
        (TLE, "time limit exceeded", "time_limit_exceeded"),
        (MLE, "memory limit exceeded", "memory_limit_exceeded"),
        (OLE, "output limit exceeded", "output_limit_exceeded"),
        (CE, "compile error", "compile_error"),
        (RJ, "rejected (rule violation)", "rejected"),
        (IE, "internal error of the judge", None),
    ],
)
def test_each_verdicts_meaning_and_corpus_folder(v, meaning, folder):
    # The folders are problems/README.md's: a corpus file's folder names the verdict it must get.
    assert v.meaning == meaning and v.directory == folder
