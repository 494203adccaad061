"""Answers problems (kind = "answers", 101-104): the exact values computed from first principles, the judge of
answer files (verdicts, CE reasons, hints), and every way in: submit/test --json, init, bench, a graded roster,
Gradescope and PrairieLearn. Nothing here runs a kernel: answer files are data."""

import csv
import json
import math
import os
import re
import sqlite3
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from judge.answers import MAX_BYTES, judge_answers
from judge.options import Options
from judge.problems import find_problem
from judge.verdicts import Verdict

ROOT = Path(__file__).resolve().parent.parent
ANSWERS = {101: "grid-and-masks", 102: "softmax-traffic", 103: "tile-smem", 104: "online-softmax-by-hand"}
KIB = 1024


def judge(*args, cwd=ROOT, env=None, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "judge", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def values(pid: int) -> dict[str, float]:
    return {p.name: p.value for p in find_problem(str(pid)).parts}


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


# ---------------------------------------------------------------- the exact values, from first principles


def test_101_grid_and_masks_from_first_principles():
    """A 1-D launch: ceil(n / BLOCK) programs; the last one's lanes at offsets >= n are masked."""
    block, fp32 = 1024, 4  # torch.randn and empty_like: float32
    n = 98_432
    programs = ceil_div(n, block)
    lanes = programs * block
    masked = lanes - n
    # Walk the last program's lanes one by one, as the mask `offsets < n` does.
    last = [(programs - 1) * block + i for i in range(block)]
    assert masked == sum(1 for off in last if off >= n)
    n_big = 2**20 + 1
    programs_big = ceil_div(n_big, block)
    expected = {
        "programs": programs,
        "masked_lanes": masked,
        "oob_bytes": masked * fp32,  # each masked lane's unmasked store: one float32 past the end
        "masked_fraction": masked / lanes,
        "programs_big": programs_big,
        "masked_lanes_big": programs_big * block - n_big,
    }
    assert expected == {
        "programs": 97,
        "masked_lanes": 896,
        "oob_bytes": 3584,
        "masked_fraction": 896 / 99328,
        "programs_big": 1025,
        "masked_lanes_big": 1023,
    }
    assert values(101) == pytest.approx(expected, rel=1e-15, abs=0)


def test_102_softmax_traffic_from_first_principles():
    """Memory-bound softmax: bytes = passes x M x N x 2 (fp16); time = bytes / 2.0e12 B/s."""
    m, n, fp16, bandwidth = 2048, 4096, 2, Fraction(2 * 10**12)
    one_pass = m * n * fp16
    naive_passes = [
        "read for the max",
        "read to exponentiate",
        "write the exponentials",
        "read to sum",
        "read to divide",
    ]
    fused_passes = ["read the row", "write the row"]
    naive, fused = len(naive_passes) * one_pass, len(fused_passes) * one_pass
    naive_us, fused_us = Fraction(naive) / bandwidth * 10**6, Fraction(fused) / bandwidth * 10**6
    expected = {
        "pass_bytes": one_pass,
        "naive_bytes": naive,
        "fused_bytes": fused,
        "naive_time_us": float(naive_us),
        "fused_time_us": float(fused_us),
        "speedup": float(naive_us / fused_us),
        "min_passes": 2,
    }  # every input element in from HBM once, every output element out once
    assert naive_us == Fraction(4194304, 100000) and expected["speedup"] == 2.5
    assert values(102) == pytest.approx(expected, rel=1e-15, abs=0)


def test_103_tile_smem_from_first_principles():
    """Shared memory of a pipelined tile config = stages x (BM x BK + BK x BN) x bytes; the fp32 accumulator
    BM x BN x 4 lives in registers; the most stages that fit is floor(capacity / bytes per stage)."""
    bm, bn, bk, stages, fp16, fp32 = 64, 128, 64, 4, 2, 4
    a_tile, b_tile = bm * bk * fp16, bk * bn * fp16
    per_stage = a_tile + b_tile
    smem = stages * per_stage
    a100, h100 = 164 * KIB, 228 * KIB
    expected = {
        "a_tile_bytes": a_tile,
        "b_tile_bytes": b_tile,
        "smem_kib": smem / KIB,
        "acc_kib": bm * bn * fp32 / KIB,
        "a100_fraction": smem / a100,
        "a100_max_stages": a100 // per_stage,
        "h100_max_stages": h100 // per_stage,
    }
    assert expected["smem_kib"] == 96 and expected["acc_kib"] == 32
    # "Does it fit": yes on both, with room for 6 and 9 stages.
    assert smem <= a100 and smem <= h100
    assert (expected["a100_max_stages"] + 1) * per_stage > a100 >= expected["a100_max_stages"] * per_stage
    assert values(103) == pytest.approx(expected, rel=1e-15, abs=0)


def test_104_online_softmax_worked_step_by_step():
    """The recurrence of the statement, block by block, against the plain softmax."""
    blocks = [([2.0], [1.0]), ([4.0], [3.0])]  # (scores, values), HEAD_DIM = 1
    m, l, o = -math.inf, 0.0, 0.0  # noqa: E741
    alphas = []
    for scores, vals in blocks:
        m_new = max(m, max(scores))
        alpha = math.exp(m - m_new)  # exp(-inf) = 0 on the first block
        p = [math.exp(s - m_new) for s in scores]
        l = alpha * l + sum(p)  # noqa: E741
        o = alpha * o + sum(pj * vj for pj, vj in zip(p, vals))
        m = m_new
        alphas.append(alpha)
    assert alphas[0] == 0.0
    scores = [s for b in blocks for s in b[0]]
    vals = [v for b in blocks for v in b[1]]
    weights = [math.exp(s) / sum(math.exp(t) for t in scores) for s in scores]
    plain = sum(w * v for w, v in zip(weights, vals))
    expected = {"alpha_2": alphas[1], "l_final": l, "o_final": o, "output": o / l, "weight_v2": weights[1]}
    assert o / l == pytest.approx(plain, rel=1e-14)
    assert expected["alpha_2"] == pytest.approx(math.exp(-2)) and expected["output"] == pytest.approx(2.7615941559)
    assert values(104) == pytest.approx(expected, rel=1e-14, abs=0)


@pytest.mark.parametrize("pid", ANSWERS)
def test_no_known_mistake_is_accepted_and_every_hint_is_ours(pid):
    problem = find_problem(str(pid))
    assert problem.kind == "answers" and problem.slug == ANSWERS[pid] and problem.speed_points == 0
    assert [g.name for g in problem.groups] == [p.name for p in problem.parts]
    assert sum(p.points for p in problem.parts) == 100
    for part in problem.parts:
        assert part.hint and part.mistakes, part.name
        for m in part.mistakes:
            for wrong in list(m.values) + [r * part.value for r in m.ratios]:
                assert not part.accepts(wrong), (part.name, wrong)
                assert part.hint_for(wrong) == (m.hint, True) or part.hint_for(wrong)[1]


# ---------------------------------------------------------------- the judge of answer files


def _judge(pid, text: str, tmp_path, name="a.toml", **opts):
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return judge_answers(find_problem(str(pid)), path, Options(**opts))


def _file(pid, **override) -> str:
    answers = {**values(pid), **override}
    return "".join(f"{k} = {v!r}\n" for k, v in answers.items())


def test_each_part_earns_its_own_points(tmp_path):
    report = _judge(101, _file(101, programs=96, masked_lanes_big=1), tmp_path)
    assert report.verdict is Verdict.WA and report.score == 100 - 20 - 10
    by = {g.name: g for g in report.groups}
    assert not by["programs"].passed and by["programs"].details["known_mistake"]
    assert "count the last, partial program" in by["programs"].details["hint"]
    # The exact answer is never shown: 97 as a number anywhere in the report (not as digits inside the file's
    # temporary path or its hash, which change from run to run).
    shown = json.dumps({k: v for k, v in report.to_json().items() if k != "submission"})
    assert not re.search(r"(?<![\w.])97(?![\w])", shown), shown
    assert report.message.startswith("programs: 96 programs is wrong")


def test_general_hint_when_no_known_mistake_matches(tmp_path):
    report = _judge(102, _file(102, speedup=2.2), tmp_path)
    g = next(g for g in report.groups if g.name == "speedup")
    assert g.details["hint"] == find_problem("102").parts[5].hint and g.details["known_mistake"] is False


def test_tolerances_relative_and_absolute(tmp_path):
    assert _judge(102, _file(102, naive_time_us=41.94304 * 1.0009), tmp_path).verdict is Verdict.AC
    assert _judge(102, _file(102, naive_time_us=41.94304 * 1.0011), tmp_path).verdict is Verdict.WA
    assert _judge(104, _file(104, output=2.761594 + 0.00099), tmp_path).verdict is Verdict.AC
    assert _judge(104, _file(104, output=2.761594 + 0.0011), tmp_path).verdict is Verdict.WA
    assert _judge(101, _file(101, programs=97.0), tmp_path).verdict is Verdict.AC
    assert _judge(101, _file(101, programs=97.001), tmp_path).verdict is Verdict.WA


@pytest.mark.parametrize(
    "text, reason",
    [
        ("", "is empty"),
        (b"\x00\x01", "binary file"),
        (b"programs = 97 # \xe9\n", "not valid UTF-8 text (byte 16, line 1)"),
        ("programs = \n", "not valid TOML: Invalid value (at line 1, column 12)"),
        ("programs = 97\n", "missing the answer 'masked_lanes'"),
        ("programs = '97'\n", "'programs' (line 1) must be a number, not a string ('97'): write it without quotes"),
        ("programs = nan\n", "the skeleton's placeholder"),
        ("programs = -inf\n", "must be a finite number, not -inf"),
        ("[answers]\nprograms = 97\n", "unknown table 'answers' (line 1)"),
        ("\n\nprogram = 97\n", "unknown key 'program' (line 3): did you mean 'programs'?"),
        ("programs.x = 97\n", "'programs' (line 1) must be a number, not a table"),
        ("programs = 1" + "0" * 400 + "\n", "'programs' (line 1) is too large for a number"),
    ],
)
def test_malformed_files_are_ce_with_one_line_naming_the_line_or_key(tmp_path, text, reason):
    if isinstance(text, str) and text.startswith("programs = ") and "missing" not in reason:
        text = text + _file(101).replace("programs = 97.0\n", "")  # every other part answered, after it
    report = _judge(101, text, tmp_path)
    assert report.verdict is Verdict.CE and report.score == 0
    assert reason in report.message and "\n" not in report.message
    assert all(not g.passed and g.skipped for g in report.groups)


def test_file_size_is_bounded(tmp_path):
    report = _judge(101, _file(101) + "#" * MAX_BYTES, tmp_path)
    assert report.verdict is Verdict.CE and f"limited to {MAX_BYTES} bytes" in report.message


def test_skeletons_list_every_part_and_are_ce_as_they_are(tmp_path):
    for pid in ANSWERS:
        problem = find_problem(str(pid))
        text = problem.skeleton_path.read_text()
        assert problem.skeleton_path.name == "skeleton.toml"
        for part in problem.parts:
            assert f"\n{part.name} = nan\n" in text and f"`{part.name}`" in problem.statement_path.read_text()
        report = judge_answers(problem, problem.skeleton_path, Options())
        assert report.verdict is Verdict.CE and "placeholder" in report.message


# ---------------------------------------------------------------- the command line


def test_submit_json_report_has_the_documented_fields():
    wa = find_problem("102").directory / "submissions" / "wrong_answer" / "fp32_bytes.toml"
    r = judge("submit", "102", wa, "--json")
    assert r.returncode == 1, r.stderr
    report = json.loads(r.stdout)
    assert set(report) == {
        "version",
        "verdict",
        "verdict_meaning",
        "score",
        "max_score",
        "full_score",
        "max_score_note",
        "message",
        "details",
        "problem",
        "submission",
        "mode",
        "seed",
        "groups",
        "speed",
        "timing",
        "notes",
        "worker",
        "output",
        "elapsed_seconds",
    }
    assert report["version"] == 1 and report["verdict"] == "WA" and report["max_score"] == 100
    assert report["problem"] == {"id": 102, "slug": "softmax-traffic", "title": "Softmax traffic: naive vs fused"}
    assert report["mode"]["kind"] == "answers" and report["speed"] == {
        "scored": False,
        "points": 0,
        "max_points": 0,
        "reason": "an answers problem has no speed part",
    }
    assert [g["name"] for g in report["groups"]] == [p.name for p in find_problem("102").parts]
    for g in report["groups"]:
        assert set(g) == {"name", "about", "points", "earned", "passed", "verdict", "cases_run", "skipped", "failure"}
        if not g["passed"]:
            assert set(g["failure"]) == {"case", "message", "details", "reproduce"}
            assert "fp16: 2 bytes per element, not 4" in g["failure"]["details"]["hint"]
    assert report["score"] == 20 + 10  # speedup and min_passes were right
    ac = find_problem("102").directory / "submissions" / "accepted" / "four_significant_figures.toml"
    r = judge("test", "softmax-traffic", ac, "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["score"] == 100 and json.loads(r.stdout)["mode"]["quick"]


def test_human_report_shows_the_hints():
    wa = find_problem("104").directory / "submissions" / "wrong_answer" / "no_rescale.toml"
    r = judge("submit", "104", wa)
    assert r.returncode == 1
    assert "hint: The running sum must be rescaled" in r.stdout and "score 15 / 100" in r.stdout


def test_init_writes_the_toml_skeleton_and_bench_refuses(tmp_path):
    r = judge("init", "103", cwd=tmp_path, env={"PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "tile_smem.toml").read_text() == find_problem("103").skeleton_path.read_text()
    r = judge("bench", "103", tmp_path / "tile_smem.toml")
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1 and "nothing to time" in lines[0]


def test_list_and_show():
    r = judge("list")
    for pid, slug in ANSWERS.items():
        assert f"{pid}  {slug}" in r.stdout
    r = judge("show", "tile-smem")
    assert r.returncode == 0 and "a100_max_stages" in r.stdout


# ---------------------------------------------------------------- grading: a roster, Gradescope, PrairieLearn


def corpus(pid, rel):
    return find_problem(str(pid)).directory / "submissions" / rel


def test_grade_a_roster_of_answer_files(tmp_path):
    roster = tmp_path / "roster"
    files = {  # student -> {problem: (corpus file, name in the folder)}
        "ana": {101: ("accepted/exact.toml", "101.toml"), 104: ("accepted/three_decimals.toml", "104.toml")},
        "ben": {
            101: ("wrong_answer/fp16_bytes.toml", "grid-and-masks.toml"),
            104: ("compile_error/formula.toml", "online_softmax_by_hand.toml"),
        },
        "cy": {101: ("compile_error/missing_part.toml", "101-grid-and-masks.toml")},
    }
    for student, mine in files.items():
        (roster / student).mkdir(parents=True)
        for pid, (rel, name) in mine.items():
            (roster / student / name).write_bytes(corpus(pid, rel).read_bytes())
    (roster / "cy" / "104.py").write_text("x = 1\n")  # a .py is no answer to an answers problem
    out = tmp_path / "out"
    r = judge(
        "grade",
        roster,
        "--problem",
        "101",
        "--problem",
        "104",
        "--out",
        out,
        "--device",
        "cpu",
        "--jobs",
        "2",
        "--sandbox",
        "process",
        "--no-progress",
        "--csv",
        out / "grades.csv",
    )
    assert r.returncode == 0, r.stderr[-2000:]
    with sqlite3.connect(out / "results.sqlite") as c:
        got = {(s, p): (v, sc) for s, p, v, sc in c.execute("SELECT student, problem, verdict, score FROM results")}
    assert got == {
        ("ana", 101): ("AC", 100),
        ("ana", 104): ("AC", 100),
        ("ben", 101): ("WA", 80),
        ("ben", 104): ("CE", 0),
        ("cy", 101): ("CE", 0),
        ("cy", 104): ("CE", 0),
    }
    with open(out / "grades.csv") as f:
        rows = {(row["student"], row["problem"]): row for row in csv.DictReader(f)}
    assert rows[("cy", "104")]["sha256"] == "missing" and float(rows[("ben", "101")]["max_score"]) == 100
    report = json.loads((out / "reports" / "ben.json").read_text())
    p101 = next(p for p in report["problems"] if p["problem"]["id"] == 101)
    failed = [g for g in p101["groups"] if not g["passed"]]
    assert [g["name"] for g in failed] == ["oob_bytes"]
    assert "torch.randn makes float32" in failed[0]["failure"]["details"]["hint"]


def test_roster_file_names_for_answers():
    from judge.grading.roster import candidate_names

    assert candidate_names(find_problem("101")) == [
        "101.toml",
        "101-grid-and-masks.toml",
        "grid-and-masks.toml",
        "grid_and_masks.toml",
    ]


RUBRIC = """
secret_seed = "answers-tests-secret"
[problems.103]
points = { a100_max_stages = 5, h100_max_stages = 5 }
visible_before_deadline = ["a_tile_bytes", "b_tile_bytes", "smem_kib", "acc_kib", "a100_fraction"]
"""


def test_gradescope_results_for_an_answers_problem(tmp_path):
    import jsonschema

    rubric = tmp_path / "rubric.toml"
    rubric.write_text(RUBRIC)
    root = tmp_path / "gs"
    (root / "submission").mkdir(parents=True)
    (root / "submission" / "mine.toml").write_bytes(corpus(103, "wrong_answer/one_stage.toml").read_bytes())
    r = judge(
        "gradescope",
        "run",
        "--problem",
        "103",
        "--root",
        root,
        "--rubric",
        rubric,
        "--device",
        "cpu",
        "--sandbox",
        "process",
    )
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads((root / "results" / "results.json").read_text())
    schema = json.loads((ROOT / "judge" / "grading" / "schemas" / "gradescope-results.schema.json").read_text())
    jsonschema.validate(doc, schema, cls=jsonschema.Draft202012Validator)
    tests = {t["name"].split(":")[0]: t for t in doc["tests"]}
    assert set(tests) == {p.name for p in find_problem("103").parts}  # one test per part, no speed test
    assert tests["smem_kib"]["status"] == "failed" and "hint: 24 KiB is one stage" in tests["smem_kib"]["output"]
    assert tests["a100_max_stages"]["max_score"] == 5 and tests["a100_max_stages"]["visibility"] == "after_due_date"
    assert doc["score"] == 10 + 10 + 15 + 5 + 5 and doc["output"].startswith("WA:")
    (root / "submission" / "mine.toml").write_bytes(corpus(103, "compile_error/infinity.toml").read_bytes())
    judge("gradescope", "run", "--problem", "103", "--root", root, "--device", "cpu", "--sandbox", "process")
    doc = json.loads((root / "results" / "results.json").read_text())
    assert doc["score"] == 0 and doc["output"].startswith("CE:") and "'smem_kib' (line 5)" in doc["output"]


@pytest.mark.parametrize("rel, gradable", [("wrong_answer/base_two.toml", True), ("compile_error/date.toml", False)])
def test_prairielearn_results_for_an_answers_problem(tmp_path, rel, gradable):
    import jsonschema

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "data.json").write_text(json.dumps({"params": {"problem": 104}, "submitted_answers": {}}))
    (tmp_path / "student").mkdir()
    (tmp_path / "student" / "answers.toml").write_bytes(corpus(104, rel).read_bytes())
    r = judge(
        "prairielearn",
        "--data",
        tmp_path / "data" / "data.json",
        "--student",
        tmp_path / "student",
        "--results",
        tmp_path / "results" / "results.json",
        "--device",
        "cpu",
        "--sandbox",
        "process",
    )
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads((tmp_path / "results" / "results.json").read_text())
    schema = json.loads((ROOT / "judge" / "grading" / "schemas" / "prairielearn-results.schema.json").read_text())
    jsonschema.validate(doc, schema, cls=jsonschema.Draft202012Validator)
    assert doc["gradable"] is gradable
    if gradable:
        assert doc["score"] == pytest.approx(0.15)  # only weight_v2 (15 of 100) was right
        assert [t["name"] for t in doc["tests"]] == [p.name for p in find_problem("104").parts]
        assert "use e, not 2" in next(t for t in doc["tests"] if t["name"] == "alpha_2")["output"]
    else:
        assert "'output' (line 6) must be a number" in doc["format_errors"][0]
