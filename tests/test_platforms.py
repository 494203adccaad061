"""Gradescope and PrairieLearn results, the autograder bundle, and the GPU grading service.

Every results.json is validated against a JSON Schema written from the
platform's published spec (judge/grading/schemas/). The judge is real
(interpreter mode, process sandbox); the grading service is the real
``judge serve`` (its job API: the clients submit, then poll).
"""

import json
import os
import re
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import pytest

from judge.problems import all_problems, find_problem

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "judge" / "grading" / "schemas"
P93 = find_problem("93")
AC = P93.directory / "submissions" / "accepted" / "masked_block.py"
WA = P93.directory / "submissions" / "wrong_answer" / "tail_dropped.py"
CE = P93.directory / "submissions" / "compile_error" / "syntax_error.py"
SECRET = "platform-tests-secret-42"
RUBRIC = f"""
deadline = 2999-01-01T00:00:00Z
secret_seed = "{SECRET}"
[problems.93]
points = {{ small-ragged = 30 }}
visible_before_deadline = ["small-ragged", "block-edges"]
visible_after_deadline = ["small-ragged", "block-edges", "views", "extreme-values"]
"""


def schema(name):
    return json.loads((SCHEMAS / f"{name}-results.schema.json").read_text())


def validate(doc, name):
    jsonschema.validate(doc, schema(name), cls=jsonschema.Draft202012Validator)


def judge(*args, env=None, cwd=ROOT, timeout=900):
    return subprocess.run(
        [sys.executable, "-m", "judge", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def test_schemas_reject_what_the_specs_forbid():
    validate({"score": 1.0, "tests": [{"score": 1, "max_score": 1, "visibility": "after_due_date"}]}, "gradescope")
    for bad in (
        {"tests": [{"max_score": 1}]},  # no score anywhere
        {"score": 1, "tests": [{"score": 1, "status": "ok"}]},
        {"score": 1, "visibility": "students"},
        {"score": 1, "leaderboard": [{"name": "speedup", "value": 2, "order": "up"}]},
    ):
        with pytest.raises(jsonschema.ValidationError):
            validate(bad, "gradescope")
    validate({"gradable": False, "format_errors": ["syntax error"]}, "prairielearn")
    for bad in (
        {"gradable": True, "score": 1.5},
        {"gradable": True},
        {"gradable": True, "score": 0.5, "tests": [{"name": "t", "points": 1}]},
        {"gradable": False},
    ):
        with pytest.raises(jsonschema.ValidationError):
            validate(bad, "prairielearn")


@pytest.fixture()
def bundle_dir(tmp_path):
    """The Gradescope bundle built and unpacked where Gradescope puts it (ROOT/source)."""
    rubric = tmp_path / "rubric.toml"
    rubric.write_text(RUBRIC)
    zpath = tmp_path / "autograder.zip"
    r = judge("gradescope", "bundle", "--problem", "93", "--rubric", rubric, "-o", zpath, "--sandbox", "process")
    assert r.returncode == 0, r.stderr
    root = tmp_path / "autograder"
    with zipfile.ZipFile(zpath) as z:
        names = z.namelist()
        for name in ("setup.sh", "run_autograder"):
            mode = z.getinfo(name).external_attr >> 16
            assert mode & stat.S_IXUSR, f"{name} must be executable"
            assert z.read(name).startswith(b"#!")
        z.extractall(root / "source")
    for name in ("setup.sh", "run_autograder"):
        (root / "source" / name).chmod(0o755)
    assert "triton-judge/judge/grading/gradescope.py" in names
    assert "triton-judge/problems/093-vector-add/problem.toml" in names
    assert not [n for n in names if "/submissions/" in n or n.startswith("triton-judge/reference/")]
    (root / "submission").mkdir()
    return root


def assert_no_host_path(folder: Path, root: Path):
    """No file written into FOLDER names a folder of the grading host (ROOT, the judge's, a temporary one)."""
    files = [p for p in folder.rglob("*") if p.is_file()]
    assert files
    for path in files:
        data = path.read_bytes()
        for host in {str(root), str(root.resolve()), str(ROOT), "/tmp/"}:
            assert host.encode() not in data, f"{path} holds the host path {host}"


def test_gradescope_setup_installs_the_cpu_build_of_torch(tmp_path):
    zpath = tmp_path / "autograder.zip"
    r = judge("gradescope", "bundle", "--problem", "93", "-o", zpath)
    assert r.returncode == 0, r.stderr
    setup = zipfile.ZipFile(zpath).read("setup.sh").decode()
    assert "--extra-index-url https://download.pytorch.org/whl/cpu torch==2.13.0+cpu" in setup
    assert "torch==2.13.0 " not in setup and "torch==2.13.0\n" not in setup


def run_autograder(root: Path):
    # The bundle's own entry point, with Gradescope's paths moved under ROOT, and this Python where setup.sh
    # would have made the bundle's virtual environment (ROOT/venv).
    python = root / "venv" / "bin" / "python"
    if not python.exists():
        python.parent.mkdir(parents=True)
        python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
        python.chmod(0o755)
    return subprocess.run(
        [str(root / "source" / "run_autograder")],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "AUTOGRADER_ROOT": str(root)},
    )


@pytest.mark.corpus
def test_gradescope_bundle_grades_a_submission(bundle_dir):
    (bundle_dir / "submission" / "my_add.py").write_bytes(WA.read_bytes())
    r = run_autograder(bundle_dir)
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads((bundle_dir / "results" / "results.json").read_text())
    validate(doc, "gradescope")
    tests = {t["name"].split(":")[0]: t for t in doc["tests"]}
    assert tests["small-ragged"]["max_score"] == 30 and tests["small-ragged"]["status"] == "failed"
    assert "reproduce: python -m judge test 93" in tests["small-ragged"]["output"]
    assert tests["small-ragged"]["visibility"] == "visible"
    assert tests["views"]["visibility"] == "after_due_date" and tests["large"]["visibility"] == "hidden"
    # The bundle judges in the interpreter, which measures no speed, and the rubric gives speed no points:
    # no speed test that nobody could pass.
    assert "speed" not in tests
    assert doc["score"] == 0 and doc["output"].startswith("WA:") and doc["stdout_visibility"] == "hidden"
    assert "reproduce: python -m judge test 93 my_add.py " in tests["small-ragged"]["output"]
    assert_no_host_path(bundle_dir / "results", bundle_dir)
    assert "leaderboard" not in doc  # no speedup measured
    # The rubric (it holds the secret) is deleted before the submission runs; the secret is nowhere.
    assert not (bundle_dir / "source" / "triton-judge" / "rubric.toml").exists()
    assert SECRET not in json.dumps(doc) + r.stdout + r.stderr


def test_gradescope_compile_error_and_missing_file(bundle_dir):
    r = run_autograder(bundle_dir)  # nothing submitted
    doc = json.loads((bundle_dir / "results" / "results.json").read_text())
    validate(doc, "gradescope")
    assert r.returncode == 0 and doc["score"] == 0 and "no submission file found" in doc["output"]
    (bundle_dir / "submission" / "add.py").write_bytes(CE.read_bytes())
    (bundle_dir / "source" / "triton-judge" / "rubric.toml").write_text(RUBRIC)  # a fresh container has it again
    r = run_autograder(bundle_dir)
    doc = json.loads((bundle_dir / "results" / "results.json").read_text())
    validate(doc, "gradescope")
    assert doc["score"] == 0 and doc["output"].startswith("CE:") and "line" in doc["output"]
    assert_no_host_path(bundle_dir / "results", bundle_dir)


def pl_dirs(tmp_path, source: Path | None, params=None):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "data.json").write_text(
        json.dumps({"params": params or {"problem": 93}, "submitted_answers": {}})
    )
    (tmp_path / "student").mkdir()
    if source is not None:
        (tmp_path / "student" / "vector_add.py").write_bytes(source.read_bytes())
    return [
        "--data",
        tmp_path / "data" / "data.json",
        "--student",
        tmp_path / "student",
        "--results",
        tmp_path / "results" / "results.json",
    ]


@pytest.mark.corpus
def test_prairielearn_accepted(tmp_path):
    rubric = tmp_path / "rubric.toml"
    rubric.write_text(RUBRIC)
    r = judge("prairielearn", *pl_dirs(tmp_path, AC), "--rubric", rubric, "--sandbox", "process", "--device", "cpu")
    assert r.returncode == 0, r.stderr[-2000:]
    text = (tmp_path / "results" / "results.json").read_text()
    doc = json.loads(text)
    validate(doc, "prairielearn")
    assert len(text.encode()) < 1 << 20
    assert doc["gradable"] is True
    # Before the deadline only small-ragged and block-edges are listed; all groups count. No speed in the
    # interpreter (the rubric gives it no points of its own): an accepted file scores 1.
    assert [t["name"] for t in doc["tests"]] == ["small-ragged", "block-edges"]
    assert doc["score"] == pytest.approx(1.0)
    assert "shown after the deadline" in doc["message"] and SECRET not in text
    assert_no_host_path(tmp_path / "results", tmp_path)


@pytest.mark.parametrize("source, text", [(CE, "SyntaxError"), (None, "no submission file found")])
def test_prairielearn_ce_is_not_gradable(tmp_path, source, text):
    r = judge("prairielearn", *pl_dirs(tmp_path, source), "--sandbox", "process", "--device", "cpu")
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads((tmp_path / "results" / "results.json").read_text())
    validate(doc, "prairielearn")
    assert doc["gradable"] is False and any(text in e or "syntax" in e.lower() for e in doc["format_errors"])
    assert_no_host_path(tmp_path / "results", tmp_path)


def test_prairielearn_results_may_name_a_folder(tmp_path):
    args = pl_dirs(tmp_path, CE)[:-2]
    (tmp_path / "out").mkdir()
    r = judge("prairielearn", *args, "--results", tmp_path / "out", "--sandbox", "process", "--device", "cpu")
    assert r.returncode == 0, r.stderr[-2000:]
    validate(json.loads((tmp_path / "out" / "results.json").read_text()), "prairielearn")
    r = judge("prairielearn", *args, "--results", f"{tmp_path / 'new'}/", "--sandbox", "process", "--device", "cpu")
    assert r.returncode == 0 and (tmp_path / "new" / "results.json").is_file()


@pytest.fixture()
def service(tmp_path):
    """The real grading service on a free local port, with a token."""
    pytest.importorskip("fastapi")  # the [serve] extra
    pytest.importorskip("uvicorn")
    token = tmp_path / "token"
    token.write_text("tok-123456789")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "judge",
            "serve",
            "--port",
            "0",
            "--device",
            "cpu",
            "--sandbox",
            "process",
            "--token-file",
            str(token),
            "--state",
            str(tmp_path / "state"),
        ],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = proc.stderr.readline()
    match = re.search(r"http://[\d.]+:\d+", line)
    assert match, line
    yield match.group(0), token
    proc.terminate()
    proc.wait(timeout=30)


@pytest.mark.corpus
def test_forward_to_the_grading_service(service, tmp_path):
    url, token = service
    root = tmp_path / "gs"
    (root / "submission").mkdir(parents=True)
    (root / "submission" / "add.py").write_bytes(AC.read_bytes())
    r = judge("gradescope", "run", "--problem", "93", "--root", root, "--forward", url, "--token-file", token)
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads((root / "results" / "results.json").read_text())
    validate(doc, "gradescope")
    assert doc["score"] == 70 and doc["output"].startswith("AC")
    # A wrong token: the service refuses (401) and the student sees an internal error, not a grade.
    bad = tmp_path / "bad"
    bad.write_text("wrong-token")
    r = judge("prairielearn", *pl_dirs(tmp_path, AC), "--forward", url, "--token-file", bad)
    doc = json.loads((tmp_path / "results" / "results.json").read_text())
    validate(doc, "prairielearn")
    assert doc["gradable"] is False and "401" in doc["message"]


def test_service_rejects_malformed_requests(service):
    import urllib.error
    import urllib.request

    url, token = service
    auth = {"Authorization": f"Bearer {token.read_text()}", "Content-Type": "application/json"}
    with urllib.request.urlopen(url + "/health", timeout=30) as resp:
        assert json.loads(resp.read())["problems"] == [p.id for p in all_problems()]  # every package, 93-104
    for body, code in (
        (b"{", 400),
        (json.dumps({"problem": "999", "source": ""}).encode(), 400),
        (json.dumps({"problem": "93", "source": "not base64!"}).encode(), 400),
    ):
        req = urllib.request.Request(url + "/submissions", data=body, headers=auth, method="POST")
        with pytest.raises(urllib.error.HTTPError) as exc:
            urllib.request.urlopen(req, timeout=30)
        assert exc.value.code == code and "error" in json.loads(exc.value.read())
