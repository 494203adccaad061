"""The human report (judge.report.render) and the report's maximum (judge.verdicts.Report)."""

import io
import json

from rich.console import Console

from judge.report import render
from judge.verdicts import GroupResult, Report, Verdict

ERROR = {
    "error": {
        "type": "ValueError",
        "message": "boom",
        "frames": [{"line": 3, "function": "<module>", "code": "raise ValueError('boom')"}],
    }
}


def _report(groups, mode=None, speed=None, verdict=Verdict.RTE):
    return Report(
        problem={"id": 93, "slug": "vector-add", "title": "Vector addition"},
        submission={"path": "/home/me/add.py", "sha256": "x"},
        mode=mode or {"device": "cpu", "interpret": True, "sandbox": "process", "quick": False},
        seed=1,
        verdict=verdict,
        message="m",
        groups=groups,
        notes=[],
        max_score=100.0,
        speed=speed
        or {"scored": False, "points": 0, "max_points": 30, "reason": "speed is not scored in interpreter mode"},
        elapsed_seconds=1.0,
    )


def _text(report) -> str:
    buf = io.StringIO()
    render(report, Console(file=buf, width=120, color_system=None))
    return buf.getvalue()


def _failed(name, case, message="error while importing the submission: ValueError: boom (line 3)"):
    return GroupResult(
        name,
        "about " + name,
        10,
        False,
        1,
        Verdict.RTE,
        case=case,
        message=message,
        details=ERROR,
        repro=f"python -m judge test 93 add.py --group {name}",
    )


def test_an_identical_failure_is_printed_once_with_its_groups():
    groups = [
        _failed("small-ragged", {"n": 1}),
        _failed("views", {"n": 2}),
        _failed("large", {"n": 3}),
        _failed("extreme-values", {"n": 4}, message="RTE: something else"),
    ]
    text = _text(_report(groups))
    assert text.count("ValueError: boom (line 3)") == 1
    assert "small-ragged, views, large" in text and "the same failure in 3 groups" in text
    assert text.count("RTE: something else") == 1 and "✗ extreme-values" in text
    # The JSON keeps every group's own failure.
    data = _report(groups).to_json()
    assert [g["failure"]["case"] for g in data["groups"]] == [{"n": 1}, {"n": 2}, {"n": 3}, {"n": 4}]


def test_wrong_values_are_never_merged():
    wa = {"output": "out", "samples": [{"index": [0], "got": 1.0, "expected": 2.0, "allowed_error": 0.1}]}
    groups = [
        GroupResult(n, "", 10, False, 1, Verdict.WA, case={"n": i}, message="out: 1 of 1 elements wrong", details=wa)
        for i, n in enumerate(("a", "b"))
    ]
    text = _text(_report(groups, verdict=Verdict.WA))
    assert "✗ a" in text and "✗ b" in text


def test_interpreter_mode_says_70_of_70_and_why():
    groups = [GroupResult(n, "", p, True, 2) for n, p in (("a", 20), ("b", 50))]
    report = _report(groups, verdict=Verdict.AC)
    assert report.attainable_score == 70 and report.score == 70
    data = report.to_json()
    assert data["max_score"] == 70 and data["full_score"] == 100 and "interpreter mode" in data["max_score_note"]
    assert "score 70 / 70" in _text(report)
    quick = _report(groups, verdict=Verdict.AC, mode={"device": "cuda", "interpret": False, "quick": True})
    assert quick.attainable_score == 70 and "quick test" in quick.max_score_note
    # On a GPU a wrong answer could have earned the speed points; an accepted one earns them when measured.
    gpu = {"device": "cuda", "interpret": False, "quick": False}
    assert _report(groups, verdict=Verdict.WA, mode=gpu).attainable_score == 100
    scored = _report(groups, verdict=Verdict.AC, mode=gpu, speed={"scored": True, "points": 12, "max_points": 30})
    assert scored.attainable_score == 100 and scored.score == 82 and scored.to_json()["max_score_note"] is None
    assert json.dumps(scored.to_json())
