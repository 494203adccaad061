"""Course grading end to end with the real judge (Triton's interpreter, process sandbox).

A sample roster is made of problem corpora: each "student" hands in corpus
files, whose folder names the verdict they must get. Everything runs through
the real CLI in child processes (``python -m judge grade ...``), the way staff
run it; nothing is mocked. Kept small: every judged file costs seconds.
"""

import csv
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from judge.problems import find_problem

ROOT = Path(__file__).resolve().parent.parent
P93 = find_problem("93")
P94 = find_problem("94")
SECRET = "tests-secret-seed-0xC0FFEE"
VERDICT = {"accepted": "AC", "wrong_answer": "WA", "compile_error": "CE", "rejected": "RJ"}


def corpus(problem, rel: str) -> Path:
    return problem.directory / "submissions" / rel


def expected_of(path: Path) -> str:
    return VERDICT[path.parent.name]


def judge(*args, env=None, timeout=900, cwd=ROOT):
    return subprocess.run(
        [sys.executable, "-m", "judge", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


def one_line(stderr: str) -> str:
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


# The sample roster: (student, problem, corpus file or None for "handed nothing in").
ROSTER = [
    ("s01", P93, "accepted/masked_block.py", "93.py"),
    ("s01", P94, "accepted/row_per_program.py", "softmax.py"),
    ("s02", P93, "wrong_answer/tail_dropped.py", "vector_add.py"),
    ("s02", P94, "rejected/torch_softmax.py", "094-softmax.py"),
    ("s03", P93, "compile_error/syntax_error.py", "093.py"),
    ("s03", P94, None, None),
    ("s04", P93, "rejected/torch_add.py", "vector-add.py"),
    ("s04", P94, "compile_error/arange_not_power_of_two.py", "94.py"),
]

RUBRIC = f"""
deadline = 2999-01-01T00:00:00Z
secret_seed = "{SECRET}"

[problems.93]
points = {{ small-ragged = 30, large = 5 }}
visible_before_deadline = ["small-ragged", "block-edges", "views"]
visible_after_deadline = ["small-ragged", "block-edges", "views", "extreme-values"]
"""


def expected_verdicts():
    return {(s, p.id): (expected_of(corpus(p, rel)) if rel else "CE") for s, p, rel, _ in ROSTER}


@pytest.mark.corpus
def test_grade_sample_roster_end_to_end(tmp_path):
    """Grade the sample roster (2 interpreter jobs), run the same command again, check every output.

    One test on purpose: under pytest-xdist a shared fixture would judge the roster once per worker.
    """
    base = tmp_path
    roster = base / "roster"
    for student, problem, rel, name in ROSTER:
        (roster / student).mkdir(parents=True, exist_ok=True)
        if rel:
            (roster / student / name).write_bytes(corpus(problem, rel).read_bytes())
    rubric = base / "rubric.toml"
    rubric.write_text(RUBRIC)
    out = base / "out"
    args = [
        "grade",
        roster,
        "--problem",
        "93",
        "--problem",
        "softmax",
        "--out",
        out,
        "--rubric",
        rubric,
        "--device",
        "cpu",
        "--jobs",
        "2",
        "--sandbox",
        "process",
        "--csv",
        out / "grades.csv",
    ]
    first = judge(*args)
    second = judge(*args, "--no-progress")
    graded = {"first": first, "second": second, "out": out, "rubric": rubric, "roster": roster}
    check_verdicts_match_the_corpus(graded)
    check_rerun_judges_nothing_and_duplicates_nothing(graded)
    check_rubric_points_and_csv_export(graded)
    check_student_reports_hide_groups_before_the_deadline(graded)
    check_the_secret_seed_never_reaches_outputs(graded)
    check_no_host_path_in_outputs(graded, tmp_path)


# The other four problems, one student each: an accepted file, a wrong answer,
# a rule violation and a compile error or crash from each corpus.
OTHERS = {
    "95": [
        "accepted/tiled_2d_grid.py",
        "wrong_answer/returns_float32.py",
        "rejected/torch_matmul.py",
        "runtime_error/asserts_contiguous.py",
    ],
    "96": [
        "accepted/one_row_per_program.py",
        "wrong_answer/weight_not_applied.py",
        "rejected/torch_rmsnorm.py",
        "compile_error/block_not_power_of_two.py",
    ],
    "97": [
        "accepted/two_pass_exp.py",
        "wrong_answer/exp_with_log2e_scale.py",
        "rejected/torch_attention.py",
        "compile_error/k_not_transposed.py",
    ],
    "98": [
        "accepted/atomic_dq_fp32.py",
        "wrong_answer/drops_delta_term.py",
        "rejected/torch_autograd.py",
        "runtime_error/float_of_none_scale.py",
    ],
}


@pytest.mark.corpus
@pytest.mark.full
def test_grade_a_roster_over_the_other_four_problems(tmp_path):
    """Every problem's corpus appears in a graded roster (93 and 94 above): verdicts as declared."""
    roster, expected = tmp_path / "roster", {}
    verdict = dict(VERDICT, runtime_error="RTE")
    for pid, files in OTHERS.items():
        problem = find_problem(pid)
        for k, rel in enumerate(files):
            student = f"s{k + 1:02d}"
            (roster / student).mkdir(parents=True, exist_ok=True)
            (roster / student / f"{problem.id}.py").write_bytes(corpus(problem, rel).read_bytes())
            expected[(student, problem.id)] = verdict[rel.split("/")[0]]
    out = tmp_path / "out"
    args = ["grade", roster, "--out", out, "--device", "cpu", "--jobs", "2", "--sandbox", "process", "--no-progress"]
    for pid in OTHERS:
        args += ["--problem", pid]
    r = judge(*args)
    assert r.returncode == 0, r.stderr[-2000:]
    got = {(s, p): v for s, p, _h, v, _sc, _t in _rows(out / "results.sqlite")}
    assert got == expected


def check_no_host_path_in_outputs(graded, tmp_path):
    """Every file grade writes names students' files by their names (or relative to the roster), never by a
    folder of this host: not the roster's, not the judge's, not a temporary one."""
    hosts = {str(tmp_path), str(tmp_path.resolve()), str(ROOT), "/tmp/"}
    files = [p for p in graded["out"].rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"results.sqlite", "summary.json", "grades.csv", "s01.json"}
    for path in files:
        data = path.read_bytes()
        for host in hosts:
            assert host.encode() not in data, f"{path.name} holds the host path {host}"
    with open(graded["out"] / "grades.csv") as f:
        paths = {r["path"] for r in csv.DictReader(f)}
    assert "s01/93.py" in paths  # relative to the roster: staff can still find the file


def _rows(db: Path):
    with sqlite3.connect(db) as c:
        return c.execute("SELECT student, problem, sha256, verdict, score, graded_at FROM results").fetchall()


def check_verdicts_match_the_corpus(graded):
    r = graded["first"]
    assert r.returncode == 0, r.stderr[-2000:]
    rows = _rows(graded["out"] / "results.sqlite")
    got = {(s, p): v for s, p, _h, v, _sc, _t in rows}
    assert got == expected_verdicts()
    assert "problem 93 vector-add: 4 students" in r.stdout and "problem 94 softmax: 4 students" in r.stdout


def check_rerun_judges_nothing_and_duplicates_nothing(graded):
    r = graded["second"]
    assert r.returncode == 0, r.stderr[-2000:]
    summary = json.loads((graded["out"] / "summary.json").read_text())
    assert summary["run"]["judged"] == 0 and summary["run"]["already_done"] == len(ROSTER)
    assert len(_rows(graded["out"] / "results.sqlite")) == len(ROSTER)


def check_rubric_points_and_csv_export(graded):
    with open(graded["out"] / "grades.csv") as f:
        rows = {(r["student"], r["problem"]): r for r in csv.DictReader(f)}
    assert len(rows) == len(ROSTER)
    ac93 = rows[("s01", "93")]
    # problem.toml: 20+15+15+10+10 = 70 for correctness; the rubric makes small-ragged 30, large 5.
    assert ac93["verdict"] == "AC" and float(ac93["score"]) == 30 + 15 + 15 + 10 + 5
    # Interpreter mode measures no speed, and the rubric gives speed no points of its own: the maximum is what
    # the groups carry, so an accepted file scores 100% (not 75 of 105).
    assert float(ac93["max_score"]) == 30 + 15 + 15 + 10 + 5
    summary = json.loads((graded["out"] / "summary.json").read_text())
    p93 = next(p for p in summary["problems"] if p["problem"] == 93)
    assert p93["histogram"][9] == 1 and p93["histogram"][7] == 0  # the AC in the 90-100% bin
    assert float(rows[("s01", "94")]["score"]) == 70.0
    assert rows[("s03", "94")]["sha256"] == "missing" and rows[("s03", "94")]["verdict"] == "CE"
    assert all(float(rows[k]["score"]) == 0 for k in rows if rows[k]["verdict"] != "AC")


def check_student_reports_hide_groups_before_the_deadline(graded):
    report = json.loads((graded["out"] / "reports" / "s02.json").read_text())
    assert report["student"] == "s02" and not report["deadline_passed"]
    p93 = next(p for p in report["problems"] if p["problem"]["id"] == 93)
    shown = {g["name"] for g in p93["groups"] if not g.get("hidden")}
    assert shown == {"small-ragged", "block-edges", "views"}
    hidden = [g for g in p93["groups"] if g.get("hidden")]
    assert all(set(g) == {"name", "hidden", "about"} for g in hidden)
    assert p93["hidden_points"] == 10 + 5 and p93["verdict"] == "WA"


def check_the_secret_seed_never_reaches_outputs(graded):
    from judge.grading.rubric import load_rubric

    rubric = load_rubric(graded["rubric"])
    derived = {str(rubric.seed_for(p)) for p in (P93, P94)}
    out = graded["out"]
    texts = [
        graded["first"].stdout,
        graded["first"].stderr,
        (out / "grades.csv").read_text(),
        (out / "summary.json").read_text(),
    ] + [p.read_text() for p in (out / "reports").glob("*.json")]
    with sqlite3.connect(out / "results.sqlite") as c:
        texts += [r[0] for r in c.execute("SELECT report FROM results")]
    for text in texts:
        assert SECRET not in text
        for seed in derived:
            assert f'"seed": {seed}' not in text and f"--seed {seed}" not in text


@pytest.mark.corpus
def test_kill_mid_run_then_resume(tmp_path):
    """SIGKILL the grading process after its first stored result; the rerun judges only the rest."""
    files = [
        corpus(P93, "compile_error/syntax_error.py"),
        corpus(P93, "compile_error/empty.py"),
        corpus(P93, "accepted/masked_block.py"),
        corpus(P93, "compile_error/wrong_arity.py"),
    ]
    lines = ["student,problem,path"] + [f"k{i},vector-add,{f}" for i, f in enumerate(files)]
    roster = tmp_path / "roster.csv"
    roster.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    argv = [
        sys.executable,
        "-m",
        "judge",
        "grade",
        str(roster),
        "--out",
        str(out),
        "--device",
        "cpu",
        "--jobs",
        "1",
        "--sandbox",
        "process",
        "--seed",
        "7",
        "--no-progress",
    ]
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    db = out / "results.sqlite"
    deadline = time.monotonic() + 300
    try:
        while time.monotonic() < deadline:
            if db.exists():
                try:
                    if len(_rows(db)) >= 1:
                        break
                except sqlite3.OperationalError:
                    pass  # the table is not created yet
            assert proc.poll() is None, "grade ended before it could be killed"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    before = _rows(db)
    assert 1 <= len(before) < len(files), "the kill must land mid-run"
    r = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    after = _rows(db)
    assert len(after) == len(files) == len({(s, p, h) for s, p, h, *_ in after})
    summary = json.loads((out / "summary.json").read_text())
    assert summary["run"]["already_done"] == len(before)
    assert summary["run"]["judged"] == len(files) - len(before)
    assert set(before) <= set(after)  # rows written before the kill are kept as they were
    assert {s: v for s, _p, _h, v, *_ in after} == {f"k{i}": expected_of(f) for i, f in enumerate(files)}


@pytest.mark.corpus
@pytest.mark.parametrize("workers", [1, pytest.param(2, marks=pytest.mark.full)])
def test_ray_executor_local_cluster(tmp_path, workers):
    if os.environ.get("JUDGE_REQUIRE_RAY") != "1":  # CI sets it: there a missing Ray fails, never skips
        pytest.importorskip("ray")
    files = [
        corpus(P93, "accepted/masked_block.py"),
        corpus(P93, "compile_error/syntax_error.py"),
        corpus(P93, "wrong_answer/tail_dropped.py"),
    ]
    roster = tmp_path / "roster"
    for i, f in enumerate(files):
        (roster / f"r{i}").mkdir(parents=True)
        (roster / f"r{i}" / "93.py").write_bytes(f.read_bytes())
    out = tmp_path / "out"
    r = judge(
        "grade",
        roster,
        "--problem",
        "93",
        "--out",
        out,
        "--executor",
        "ray",
        "--device",
        "cpu",
        "--jobs",
        workers,
        "--sandbox",
        "process",
        "--seed",
        "3",
        "--no-progress",
    )
    assert r.returncode == 0, r.stderr[-2000:]
    got = {s: v for s, _p, _h, v, *_ in _rows(out / "results.sqlite")}
    assert got == {f"r{i}": expected_of(f) for i, f in enumerate(files)}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["run"]["executor"] == "ray" and summary["run"]["judged"] == len(files)


def test_ray_missing_is_a_usage_error(tmp_path):
    fake = tmp_path / "fake" / "ray"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('no ray here')\n")
    roster = tmp_path / "roster"
    roster.mkdir()
    (roster / "a.py").write_text("x = 1\n")
    r = judge(
        "grade",
        roster,
        "--problem",
        "93",
        "--out",
        tmp_path / "out",
        "--executor",
        "ray",
        "--device",
        "cpu",
        env={"PYTHONPATH": str(fake.parent)},
    )
    assert r.returncode == 2
    assert "Ray is not installed" in one_line(r.stderr)


@pytest.mark.parametrize(
    "args, text",
    [
        (["--problem", "93", "--problem", "94"], "only allowed when grading one problem"),
        (["--problem", "999"], "unknown problem '999'"),
        ([], "needs --problem"),
        (["--problem", "93", "--gpus", "x"], "--gpus must be GPU indices"),
    ],
)
def test_bad_roster_or_options_are_one_line_usage_errors(tmp_path, args, text):
    roster = tmp_path / "roster"
    roster.mkdir()
    (roster / "alice.py").write_text("x = 1\n")
    r = judge("grade", roster, "--out", tmp_path / "out", "--device", "cpu", *args)
    assert r.returncode == 2 and text in one_line(r.stderr)


@pytest.mark.parametrize(
    "rubric, text",
    [
        ("[problems.93]\npoints = { nope = 3 }\n", "unknown group 'nope'"),
        (
            "[problems.93]\nvisible_before_deadline = ['large']\nvisible_after_deadline = ['views']\n",
            "must stay visible after it",
        ),
        ("secret_seed = 'short'\n", "at least 8 characters"),
        ("deadline = 2026-01-01T00:00:00\n", "with a time zone"),
        ("[problems.93.speed]\ncurve = [[2.0, 1.0], [1.0, 0.5]]\n", "increasing speedups"),
        ("colour = 1\n", "unknown key(s) colour"),
    ],
)
def test_bad_rubric_is_a_one_line_usage_error(tmp_path, rubric, text):
    (tmp_path / "r.toml").write_text(rubric)
    roster = tmp_path / "roster"
    roster.mkdir()
    (roster / "alice.py").write_text("x = 1\n")
    r = judge(
        "grade",
        roster,
        "--problem",
        "93",
        "--rubric",
        tmp_path / "r.toml",
        "--out",
        tmp_path / "out",
        "--device",
        "cpu",
    )
    assert r.returncode == 2 and text in one_line(r.stderr)


def test_folder_rule_and_csv_roster(tmp_path):
    from judge.grading.roster import load_roster, pick_file

    d = tmp_path / "bob"
    d.mkdir()
    (d / "notes.py").write_text("")
    assert pick_file(d, P94, single_problem=True) == d / "notes.py"  # the only .py file, one problem
    assert pick_file(d, P94, single_problem=False) is None
    (d / "softmax.py").write_text("")
    (d / "094-softmax.py").write_text("")
    assert pick_file(d, P94, single_problem=True) == d / "094-softmax.py"  # <NNN-slug> before <slug>
    (d / "94.py").write_text("")
    assert pick_file(d, P94, single_problem=False) == d / "94.py"
    (tmp_path / "r.csv").write_text(
        "student,problem,path\nbob,softmax,bob/94.py\nann,93,ann/none.py\nbob,softmax,bob/94.py\n"
    )
    entries = load_roster(tmp_path / "r.csv", [])
    assert [(e.student, e.problem.id, e.path and e.path.name) for e in entries] == [
        ("bob", 94, "94.py"),
        ("ann", 93, None),
    ]  # a listed file that is not there: "no submission"


def test_speed_curve_maps_the_reported_speedup():
    from judge.grading.rubric import ProblemRubric, speed_points

    pr = ProblemRubric(speed={"max_points": 30, "curve": [[0.5, 0.0], [1.0, 0.5], [2.0, 1.0]]})
    assert speed_points(pr, {"scored": True, "speedup": 1.5, "max_points": 30}, P94) == (22.5, 30)
    assert speed_points(pr, {"scored": True, "speedup": 9.0, "max_points": 30}, P94) == (30.0, 30)
    assert speed_points(pr, {"scored": False, "max_points": 30}, P94) == (0.0, 30)
    # Without a curve the report's own points are rescaled to the rubric's maximum.
    assert speed_points(
        ProblemRubric(speed={"max_points": 10}), {"scored": True, "points": 15, "max_points": 30}, P94
    ) == (5.0, 10)


def test_the_documented_example_rubric_loads():
    from judge.grading.rubric import load_rubric

    example = Path(__file__).resolve().parents[1] / "judge" / "grading" / "rubric.example.toml"
    rubric = load_rubric(example)
    assert rubric.problems, "the example rubric configures no problem"


def test_the_rubric_reads_the_speedup_the_judge_reports():
    """The speed part as submit writes it (judge.timing.score) is what the rubric's curve reads."""
    from judge.grading.rubric import ProblemRubric, speed_points
    from judge.timing.score import SpeedScore

    speed = SpeedScore(max_points=30).section({"geomean_speedup": 0.75, "shapes": [{}, {}]})
    assert speed["speedup"] == 0.75 and speed["scored"]
    curve = ProblemRubric(speed={"max_points": 20, "curve": [[0.5, 0.0], [1.0, 1.0]]})
    points, most = speed_points(curve, speed, P93)
    assert most == 20 and points == pytest.approx(10.0)
    assert speed_points(ProblemRubric(), speed, P93) == (speed["points"], 30.0)


def test_interpreter_reports_earn_no_speed_points_unless_the_rubric_says_so():
    """An accepted report from the interpreter: 70 of 70 without a rubric (not the 70-80% bin), while a rubric
    that gives speed points keeps them in the maximum."""
    from judge.grading.rubric import ProblemRubric, Rubric, grade

    groups = [{"name": g.name, "passed": True, "verdict": "AC"} for g in P93.groups]
    report = {
        "verdict": "AC",
        "groups": groups,
        "mode": {"device": "cpu", "interpret": True},
        "speed": {"scored": False, "points": 0, "max_points": 30, "reason": "interpreter mode"},
        "submission": {"path": "/tmp/course/roster/carol.py", "sha256": "x"},
    }
    graded = grade(report, P93, Rubric())
    assert graded["score"] == graded["max_score"] == 70 and graded["speed"]["max_points"] == 0
    assert graded["submission"]["path"] == "carol.py"
    with_speed = grade(report, P93, Rubric(problems={93: ProblemRubric(speed={"max_points": 30})}))
    assert with_speed["max_score"] == 100
    on_gpu = grade(dict(report, mode={"device": "cuda", "interpret": False}, verdict="WA"), P93, Rubric())
    assert on_gpu["max_score"] == 100


def test_job_processes_started_ahead_serve_one_job_each_and_none_is_left():
    # judge.grading.job.Spares: the next job's process is started while a job runs, so its imports are done
    # when the slot frees. Each process gets exactly one job (each job's own problem comes back in its own
    # report), a roster of three on one slot takes two spares, and no process is left at the end.
    from judge.grading import job as job_mod
    from judge.grading.executors import LocalExecutor

    specs = [(i, {"problem": f"no-such-problem-{i}", "path": "x", "device": "cpu"}) for i in range(3)]
    got = {}
    executor = LocalExecutor([None], timeout=120)
    executor.run(specs, lambda key, report: got.__setitem__(key, report))
    assert sorted(got) == [0, 1, 2]
    for key, report in got.items():
        assert report["verdict"] == "IE" and f"unknown problem 'no-such-problem-{key}'" in report["message"]
    assert executor.spare_stats == {"taken": 2, "started": 2, "unused": 0}
    assert not job_mod._children


def test_a_spare_job_process_that_died_waiting_is_not_handed_a_job():
    from judge.grading import job as job_mod

    spares = job_mod.Spares()
    spares.refill(None, 1)
    (proc,) = spares._ready[None]
    proc.kill()
    proc.wait(timeout=30)
    assert spares.take(None) is None and proc not in job_mod._children
    spares.refill(None, 1)
    spares.close()  # the unused one is ended, not left waiting on its stdin
    assert spares.stats == {"taken": 0, "started": 2, "unused": 1} and not job_mod._children


def test_job_spares_never_outnumber_the_jobs_left_and_a_failed_fork_costs_no_job(monkeypatch):
    # Which GPU the next job lands on is not known, so a roster's end may leave spares unused on the GPUs the
    # last jobs did not get; none is started while as many wait as jobs are left. A spare that cannot be started (fork fails) costs
    # the job nothing: it runs in the process it was given, or its own.
    import time as time_mod

    from judge.grading import executors as ex
    from judge.grading import job as job_mod

    class FakeProc:
        def __init__(self, gpu):
            self.gpu, self.rc = gpu, None

        def poll(self):
            return self.rc

        def kill(self):
            self.rc = -9

        def communicate(self, *args, **kwargs):
            return "", ""

    fail = {"spawn": False}

    def spawn(*, gpu=None, workers=None, pool=None, nice=0):
        if fail["spawn"]:
            raise OSError(24, "Too many open files")
        proc = FakeProc(gpu)
        with job_mod._children_lock:
            job_mod._children.add(proc)
        return proc

    def run(spec, *, timeout, gpu=None, workers=None, pool=None, proc=None, nice=0):
        time_mod.sleep(0.02 * (1 + spec["i"] % 3))
        if proc is not None:
            assert proc.gpu == gpu  # a spare serves a job on the GPU it was started for
            job_mod._forget(proc)
        return {"verdict": "AC", "spare": proc is not None}

    monkeypatch.setattr(job_mod, "spawn_job", spawn)
    monkeypatch.setattr(ex, "run_subprocess", run)
    for slots, n in (([0, 1], 3), (list(range(8)), 9), ([0, 0, 1, 1], 5), ([None], 4)):
        got = {}
        executor = ex.LocalExecutor(slots, timeout=10)
        executor.run([(i, {"i": i}) for i in range(n)], lambda k, r: got.__setitem__(k, r))
        stats = executor.spare_stats
        assert len(got) == n and stats["taken"] + stats["unused"] == stats["started"], (slots, stats)
        # At most one unused per slot but one (the last job's), none at all with one GPU and one slot.
        assert stats["started"] <= n - 1 and stats["unused"] <= len(slots) - 1, (slots, stats)
        assert not job_mod._children
    fail["spawn"] = True
    got = {}
    executor = ex.LocalExecutor([None], timeout=10)
    executor.run([(i, {"i": i}) for i in range(3)], lambda k, r: got.__setitem__(k, r))
    assert [got[i]["verdict"] for i in range(3)] == ["AC"] * 3 and executor.spare_stats["started"] == 0


# ---------------------------------------------------------------------------- a GPU full of other judges' work


def _report(verdict: str, message: str):
    from judge.verdicts import Report, Verdict

    return Report(
        problem={},
        submission={},
        mode={},
        seed=0,
        verdict=Verdict(verdict),
        message=message,
        groups=[],
        notes=[],
        max_score=100.0,
        speed={},
        elapsed_seconds=0.0,
    )


OOM_IE = (
    "IE",
    "speed run: the reference worker failed while timed: OutOfMemoryError: CUDA out of memory. Tried to "
    "allocate 1024.00 MiB. GPU 0 has a total capacity of 79.19 GiB of which 624.69 MiB is free.",
)
AGAIN = "judged 2 times: the GPU ran out of memory with other work (then it went through)"


@pytest.mark.parametrize(
    "first,runs,verdict,note",
    [
        (OOM_IE, 2, "AC", AGAIN),
        (("IE", "the judging job failed: KeyError: 'x'"), 1, "IE", None),
        (("MLE", "while timed: OutOfMemoryError: CUDA out of memory within its own 12 GiB"), 1, "MLE", None),
        # The judge's own words for a worker's error, a replay's, a worker's "busy or unavailable" on a full device
        # (judge.shared.oom.device_full), in every phase: a case, a replay, the speed run.
        (
            (
                "IE",
                "block-edges: the replay check could not run (the record): the GPU was full with other work: this "
                "process held 0.60 GiB and asked for 0.00 GiB more, within its 2.00 GiB",
            ),
            2,
            "AC",
            AGAIN,
        ),
        (
            (
                "IE",
                "the GPU cannot hold this judging: this judging needs 95.0 GiB of GPU memory and GPU 0 can give at "
                "most 77.2 GiB",
            ),
            1,
            "IE",
            None,
        ),  # refused by the admission: no retry can change it
    ],
)
def test_a_judging_that_failed_because_the_gpu_was_full_is_judged_again(first, runs, verdict, note):
    """Only an IE of the GPU's running out of memory with other work is judged again (submit, test, grade, the
    platforms: judge.judging.judge_file), after a wait for memory given back; a bug of ours, the file's own MLE,
    or a judging the device can never hold stays as it is."""
    from judge.judging import judged_again_on_capacity

    reports = [_report(*first), _report("AC", "all tests passed")]
    waits = []
    report = judged_again_on_capacity(lambda: reports.pop(0), lambda: waits.append(1))
    assert report.verdict.value == verdict and len(waits) == runs - 1
    assert (report.notes or [None])[-1] == note if note else not report.notes


def test_a_judging_the_gpu_never_has_room_for_stays_ie_after_its_retries():
    from judge.judging import CAPACITY_RETRIES, judged_again_on_capacity

    runs = []
    report = judged_again_on_capacity(lambda: runs.append(1) or _report(*OOM_IE), lambda: None)
    assert report.verdict.value == "IE" and len(runs) == CAPACITY_RETRIES + 1
    assert report.notes[-1].endswith("(every time)")


def test_the_judges_own_out_of_memory_is_judged_again_and_any_other_exception_is_not():
    """An out-of-memory error raised in the judge's own process (its GPU work without a CPU fallback) is tried
    again; after the last try, and for any other exception, it is raised as before (the command's IE)."""
    import torch

    from judge.judging import CAPACITY_RETRIES, judged_again_on_capacity

    tries = []

    def run():
        tries.append(1)
        if len(tries) == 1:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return _report("AC", "all tests passed")

    assert judged_again_on_capacity(run, lambda: None).verdict.value == "AC" and len(tries) == 2
    with pytest.raises(torch.cuda.OutOfMemoryError):
        judged_again_on_capacity(
            lambda: (_ for _ in ()).throw(torch.cuda.OutOfMemoryError("out of memory")), lambda: None
        )
    tries.clear()
    with pytest.raises(KeyError):
        judged_again_on_capacity(lambda: tries.append(1) or {}["x"], lambda: None)
    assert len(tries) == 1 and CAPACITY_RETRIES >= 1


def test_a_gpu_rosters_default_jobs_come_from_the_cores_and_the_admission_decides_the_rest(monkeypatch):
    """With no --jobs, a GPU gets a job per core but four, not a fixed few; what fits of them in its memory is the
    admission's (judge.gpu_admission). On the CPU, a job per 4 cores."""
    from judge.grading import executors

    for cores, gpus, jobs in ((16, 1, 12), (16, 2, 4), (128, 8, 12), (64, 1, 16), (2, 1, 1)):
        monkeypatch.setattr(executors.os, "cpu_count", lambda c=cores: c)
        assert executors.jobs_per_gpu(gpus) == jobs, (cores, gpus)
    for cores, jobs in ((2, 1), (16, 4)):
        monkeypatch.setattr(executors.os, "cpu_count", lambda c=cores: c)
        assert executors.jobs_on_cpu() == jobs
