"""JUDGE_TIMELINE: a submit's timeline (judge/timeline.py) holds what its time went to, and the summary reads it."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from judge import timeline
from judge.problems import find_problem

ROOT = Path(__file__).resolve().parents[1]
SOFTMAX = find_problem("94")
GOOD = SOFTMAX.directory / "submissions" / "accepted" / "row_per_program.py"


def test_a_submit_writes_its_timeline_into_a_folder(tmp_path):
    env = {**os.environ, "JUDGE_TIMELINE": str(tmp_path), "JUDGE_WORKERS": "2"}
    r = subprocess.run(
        [sys.executable, "-m", "judge", "submit", "94", str(GOOD), "--device", "cpu", "--sandbox", "process"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    files = list(tmp_path.glob("timeline-*.json"))
    assert len(files) == 1
    events = [e for e in json.loads(files[0].read_text())["traceEvents"] if e["ph"] == "X"]
    names = [e["name"] for e in events]
    assert "import torch (the judge)" in names
    assert names.count("worker start") == 2
    for g in SOFTMAX.groups:
        assert f"group {g.name}" in names
    lanes = {e["args"]["thread"] for e in events if e["name"].startswith("case (")}
    assert lanes == {"judge-lane0", "judge-lane1"}
    # Every case span holds its parts, in order, within it.
    case = next(e for e in events if e["name"].startswith("case ("))
    inside = [
        e
        for e in events
        if e["tid"] == case["tid"]
        and case["ts"] <= e["ts"]
        and e["ts"] + e["dur"] <= case["ts"] + case["dur"]
        and e is not case
    ]
    assert [e["name"] for e in sorted(inside, key=lambda e: e["ts"])] == [
        "inputs, sent",
        "golden answer",
        "the worker's reply",
        "check",
    ]
    assert {"kernels_compiled", "compile_seconds", "worker_seconds"} <= set(case["args"])
    # The worker's own split of its seconds (judge.replies.records.Evidence.phases), within the case's span: not within
    # "worker_seconds", the judge's wait once its golden answer is computed, while the worker was already at
    # work (a CI run of 2026-12-05: 0.109 s of the worker's own against a 0.103 s wait).
    own = [case["args"][f"worker_{k}_seconds"] for k in ("inputs", "call", "after")]
    assert all(v >= 0 for v in own) and 0 < sum(own) <= case["dur"] / 1e6
    # The process's clock: the torch import comes after the python start, before the groups.
    first_group = min(e["ts"] for e in events if e["name"].startswith("group "))
    torch_import = next(e for e in events if e["name"] == "import torch (the judge)")
    assert 0 < torch_import["ts"] < first_group

    s = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "bench" / "timeline_summary.py"), str(files[0])],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert s.returncode == 0, s.stderr
    assert "judge-lane0:" in s.stdout and "judge-lane1:" in s.stdout and "group small-ragged" in s.stdout
    assert "; worker " in s.stdout


def test_off_records_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv("JUDGE_TIMELINE", raising=False)
    assert not timeline.start()
    with timeline.span("x"):
        pass
    assert timeline.write() is None
    target = tmp_path / "t.json"
    assert timeline.start(str(target))
    t0 = time.monotonic()
    with timeline.span("x", a=1) as about:
        about["b"] = 2
    assert timeline.write() == target
    data = json.loads(target.read_text())
    (event,) = [e for e in data["traceEvents"] if e["ph"] == "X"]
    assert event["name"] == "x" and event["args"]["a"] == 1 and event["args"]["b"] == 2
    assert not timeline.on()
    # Its zero on the host's monotonic clock, so that the timelines of a roster's jobs line up: the span began
    # at t0 on that clock (to within the span's own start).
    assert abs(data["otherData"]["monotonic_origin_s"] + event["ts"] / 1e6 - t0) < 0.05


def test_a_grading_job_writes_its_own_timeline(tmp_path):
    # judge grade / serve run each submission in `python -m judge.grading.job`: with JUDGE_TIMELINE a folder,
    # each job leaves a file of its own there.
    vector_add = find_problem("93")
    env = {**os.environ, "JUDGE_TIMELINE": str(tmp_path), "PYTHONPATH": str(ROOT)}
    spec = {
        "problem": "93",
        "path": str(vector_add.reference_path),
        "device": "cpu",
        "sandbox": "process",
        "seed": 1,
        "max_examples": 2,
    }
    r = subprocess.run(
        [sys.executable, "-m", "judge.grading.job"],
        input=json.dumps(spec),
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["verdict"] == "AC"
    (f,) = tmp_path.glob("timeline-*.json")
    names = {e["name"] for e in json.loads(f.read_text())["traceEvents"]}
    assert {f"group {g.name}" for g in vector_add.groups} <= names
