"""``--save-case DIR``: the failing case as a .pt file, rebuilt by the judge from the case's parameters, with a
three-line loader in the report."""

import json
import os
import subprocess
import sys
from pathlib import Path

import torch

from judge.problems import find_problem
from judge.savecase import build_case

ROOT = Path(__file__).resolve().parent.parent
VECTOR_ADD = find_problem("93")
SOFTMAX = find_problem("94")
WRONG = VECTOR_ADD.directory / "submissions" / "wrong_answer" / "tail_dropped.py"


def test_a_saved_case_keeps_the_exact_layout(tmp_path):
    params = {"M": 3, "N": 10, "dtype": "float16", "layout": "padded", "values": "normal", "seed": 99}
    data = build_case(SOFTMAX, params)
    path = tmp_path / "case.pt"
    torch.save(data, path)
    case = torch.load(path, weights_only=True)
    (x,) = case["args"]
    (layout,) = case["inputs"]
    assert x.shape == (3, 10) and x.stride() == (13, 1) and x.dtype == torch.float16  # rows N + 3 apart
    assert layout == {"shape": [3, 10], "stride": [13, 1], "offset": 0, "dtype": "float16", "storage_numel": 36}
    storage = torch.as_strided(x, (layout["storage_numel"],), (1,), 0)
    gaps = torch.ones(36, dtype=torch.bool)
    gaps[torch.arange(3).repeat_interleave(10) * 13 + torch.arange(10).repeat(3)] = False
    assert storage[gaps].isnan().all()  # the padding the worker saw: NaN
    (expected,) = case["expected"]
    assert expected.dtype == torch.float64 and case["expected_dtypes"] == ["float16"]
    assert torch.allclose(expected, torch.softmax(x.double(), dim=-1))
    assert case["params"] == params and case["entry_point"] == "softmax" and case["outputs"] == ["out"]


def test_save_case_writes_the_failing_case_and_its_loader_reproduces_it(tmp_path):
    saved = tmp_path / "cases"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "judge",
            "test",
            "93",
            str(WRONG),
            "--device",
            "cpu",
            "--sandbox",
            "process",
            "--seed",
            "2",
            "--group",
            "views",
            "--json",
            "--save-case",
            str(saved),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert r.returncode == 1, r.stderr
    report = json.loads(r.stdout)
    (group,) = [g for g in report["groups"] if not g["passed"]]
    failure = group["failure"]
    info = failure["details"]["saved_case"]
    assert info["path"] == str(saved / "093-vector-add-views.pt") and Path(info["path"]).is_file()
    loader = info["loader"].splitlines()
    assert len(loader) == 3 and "from tail_dropped import add" in loader[0]
    # The printed loader, run beside the submission, loads the case and calls the file on it.
    check = (
        "\n".join(loader)
        + "\n"
        + "\n".join(
            [
                "import importlib.util, json",
                "wrong = (out.double() - case['expected'][0]).abs().gt(1e-3) | out.isnan()",
                # The reference, called on the saved case, gives the expected outputs.
                f"spec = importlib.util.spec_from_file_location('ref', {str(VECTOR_ADD.reference_path)!r})",
                "ref = importlib.util.module_from_spec(spec); spec.loader.exec_module(ref)",
                "ref_out = ref.add(*case['args'])",
                "eps = torch.finfo(ref_out.dtype).eps",
                "ref_ok = bool(torch.allclose(ref_out.double(), case['expected'][0], rtol=eps, atol=eps, equal_nan=True))",
                "print(json.dumps({'params': case['params'], 'wrong': int(wrong.sum()), 'ref_ok': ref_ok,",
                "                  'layout': [[list(a.shape), list(a.stride()), a.storage_offset()] for a in case['args']],",
                "                  'inputs': case['inputs'], 'verdict': case['verdict']}))",
            ]
        )
    )
    ran = subprocess.run([sys.executable, "-c", check], cwd=WRONG.parent, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    got = json.loads(ran.stdout.strip().splitlines()[-1])
    assert got["params"] == failure["case"] and got["verdict"] == "WA"
    assert got["ref_ok"]  # the reference, on the saved inputs, gives the saved expected outputs
    assert got["layout"] == [[i["shape"], i["stride"], i["offset"]] for i in got["inputs"]]
    assert any(i["offset"] or i["stride"] != [1] for i in got["inputs"])  # a view, as the group promises
    n_wrong = int(failure["message"].split(" of ")[0].split()[-1])  # "out: K of N elements wrong: ..."
    assert got["wrong"] == n_wrong


def test_save_case_with_nothing_failed_says_so(tmp_path):
    good = VECTOR_ADD.directory / "submissions" / "accepted" / "masked_block.py"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "judge",
            "test",
            "93",
            str(good),
            "--device",
            "cpu",
            "--sandbox",
            "process",
            "--seed",
            "1",
            "--group",
            "small-ragged",
            "--json",
            "--save-case",
            str(tmp_path / "none"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert r.returncode == 0, r.stderr
    assert any("nothing saved" in n for n in json.loads(r.stdout)["notes"])
    assert not (tmp_path / "none").exists()


def test_the_human_report_prints_the_saved_case_and_its_loader(tmp_path):
    import io

    from rich.console import Console

    from judge.report import render
    from judge.savecase import loader
    from judge.verdicts import GroupResult, Report, Verdict

    path = tmp_path / "093-vector-add-views.pt"
    lines = loader(VECTOR_ADD, path, "/home/me/my add.py", "cpu")
    assert len(lines.splitlines()) == 3 and "from " not in lines  # "my add" is no module name: args only
    lines = loader(VECTOR_ADD, path, "/home/me/add_mine.py", "cuda")
    assert lines.splitlines()[0] == "import torch; from add_mine import add"
    group = GroupResult(
        "views",
        "views",
        15,
        False,
        3,
        Verdict.WA,
        case={"n": 5, "seed": 1},
        message="wrong",
        details={"saved_case": {"path": str(path), "loader": lines}},
        repro="python -m judge ...",
    )
    report = Report(
        problem={"id": 93, "slug": "vector-add", "title": "Vector addition"},
        submission={"path": "add_mine.py", "sha256": "x"},
        mode={"device": "cuda", "interpret": False, "sandbox": "process", "quick": True},
        seed=1,
        verdict=Verdict.WA,
        message="views: wrong",
        groups=[group],
        notes=[],
        max_score=100.0,
        speed={"scored": False, "points": 0, "max_points": 30, "reason": "quick"},
        elapsed_seconds=1.0,
    )
    buf = io.StringIO()
    render(report, Console(file=buf, width=200, color_system=None))
    text = buf.getvalue()
    assert f"saved case: {path}; load it with:" in text
    for line in lines.splitlines():
        assert line in text
    round_trip = json.loads(json.dumps(report.to_json()))
    assert round_trip["groups"][0]["failure"]["details"]["saved_case"]["path"] == str(path)
