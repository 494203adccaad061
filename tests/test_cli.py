"""The command line: exit codes, one-line errors, --json, init. Runs the real CLI."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from judge.problems import find_problem

VECTOR_ADD = find_problem("93")
GOOD = VECTOR_ADD.directory / "submissions" / "accepted" / "masked_block.py"
WRONG = VECTOR_ADD.directory / "submissions" / "wrong_answer" / "tail_dropped.py"


def judge(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "judge", *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=600
    )


def one_line(stderr: str) -> str:
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def test_list_names_all_problems():
    r = judge("list")
    assert r.returncode == 0
    for pid in ("93", "94", "95", "96", "97", "98"):
        assert pid in r.stdout


def test_show_prints_the_statement():
    r = judge("show", "vector-add")
    assert r.returncode == 0 and "add(x, y)" in r.stdout


@pytest.mark.parametrize("key", ["093", "93", "vector-add"])
def test_zero_padded_ids_and_slugs_name_the_problem(key, tmp_path):
    r = judge("show", key)
    assert r.returncode == 0 and "add(x, y)" in r.stdout
    r = judge("init", key, tmp_path / "mine.py")
    assert r.returncode == 0 and (tmp_path / "mine.py").read_text() == VECTOR_ADD.skeleton_path.read_text()


def test_unknown_problem_is_a_usage_error_listing_valid_ones():
    r = judge("submit", "999", GOOD)
    assert r.returncode == 2
    line = one_line(r.stderr)
    assert "unknown problem '999'" in line and "93 (vector-add)" in line and "98" in line


def test_missing_file_is_a_usage_error(tmp_path):
    r = judge("submit", "93", tmp_path / "nope.py")
    assert r.returncode == 2 and "no such file" in one_line(r.stderr)


def test_directory_is_a_usage_error(tmp_path):
    r = judge("submit", "93", tmp_path)
    assert r.returncode == 2 and "is a directory" in one_line(r.stderr)


def test_bad_option_is_a_usage_error():
    r = judge("submit", "93", GOOD, "--device", "tpu")
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_oversized_file_is_a_compile_error(tmp_path):
    big = tmp_path / "big.py"
    big.write_text("# padding\n" * 120_000 + "def add(x, y):\n    return x\n")
    r = judge("submit", "93", big, "--json")
    assert r.returncode == 1
    report = json.loads(r.stdout)
    assert report["verdict"] == "CE" and "1 MiB" in report["message"] and report["score"] == 0


def test_accepted_json_report(tmp_path):
    r = judge("submit", "93", GOOD, "--json", "--seed", "5", "--device", "cpu", "--sandbox", "process")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)  # stdout holds the JSON and nothing else
    assert report["version"] == 1 and report["verdict"] == "AC"
    assert report["problem"] == {"id": 93, "slug": "vector-add", "title": "Vector addition"}
    # In the interpreter speed is not measured: 70 of 70, and the report says why (the problem's full score: 100).
    assert report["score"] == 70 and report["max_score"] == 70 and report["full_score"] == 100
    assert "interpreter mode" in report["max_score_note"]
    assert report["speed"]["scored"] is False
    assert all(g["passed"] for g in report["groups"])
    assert report["mode"] == {"device": "cpu", "interpret": True, "sandbox": "process", "quick": False}


def test_failure_reports_a_reproducible_case():
    r = judge("submit", "vector-add", WRONG, "--json", "--seed", "2", "--device", "cpu")
    assert r.returncode == 1
    report = json.loads(r.stdout)
    assert report["verdict"] == "WA"
    failed = [g for g in report["groups"] if not g["passed"]]
    repro = failed[0]["failure"]["reproduce"]
    assert repro.startswith("python -m judge test 93 tail_dropped.py ")  # the file's own name, no folder
    # The reproduce line replays exactly the failing case (run beside the file), and fails the same way.
    import shlex

    argv = shlex.split(repro)[3:]
    again = judge(*argv, "--json", cwd=WRONG.parent)
    assert again.returncode == 1
    rerun = json.loads(again.stdout)
    groups = [g for g in rerun["groups"] if g["name"] == failed[0]["name"]]
    assert groups[0]["failure"]["case"] == failed[0]["failure"]["case"]
    assert groups[0]["cases_run"] == 1


def test_human_report_shows_groups_verdict_and_score():
    r = judge("submit", "93", WRONG, "--seed", "2", "--device", "cpu")
    assert r.returncode == 1
    assert "✗" in r.stdout and "WA wrong answer" in r.stdout and "score" in r.stdout
    assert "reproduce:" in r.stdout and "never written" in r.stdout
    assert "Triton's interpreter" in r.stderr
    assert "/ 70" in r.stdout and "speed is not measured in interpreter mode" in r.stdout


def test_default_sandbox_is_auto_and_said():
    r = judge("submit", "93", GOOD, "--json", "--seed", "5", "--device", "cpu")
    report = json.loads(r.stdout)
    assert report["mode"]["sandbox"] in ("docker", "bwrap", "process")
    if report["mode"]["sandbox"] == "process":
        assert any("no sandbox available" in n for n in report["notes"])


def test_unavailable_sandbox_is_a_usage_error(monkeypatch, tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "judge", "submit", "93", str(GOOD), "--sandbox", "bwrap"],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": str(tmp_path)},
    )
    assert r.returncode == 2 and "bubblewrap" in one_line(r.stderr)


def test_unknown_sandbox_is_a_usage_error():
    r = judge("submit", "93", GOOD, "--sandbox", "chroot")
    assert r.returncode == 2 and "valid: auto, docker, bwrap, process" in one_line(r.stderr)


def test_bad_case_json_is_a_usage_error():
    r = judge("test", "93", GOOD, "--group", "small-ragged", "--case", "{bad")
    assert r.returncode == 2 and "not valid JSON" in one_line(r.stderr)


def test_case_outside_the_domain_is_a_usage_error():
    r = judge("test", "93", GOOD, "--group", "small-ragged", "--case", '{"n": 5, "seed": 1}')
    assert r.returncode == 2 and "lacks" in one_line(r.stderr)


def test_init_writes_the_skeleton_and_never_overwrites(tmp_path):
    target = tmp_path / "mine.py"
    r = judge("init", "93", target)
    assert r.returncode == 0 and target.read_text() == VECTOR_ADD.skeleton_path.read_text()
    target.write_text("# my work\n")
    r = judge("init", "93", target)
    assert r.returncode == 2 and "--force" in one_line(r.stderr)
    assert target.read_text() == "# my work\n"
    r = judge("init", "93", target, "--force")
    assert r.returncode == 0 and target.read_text() == VECTOR_ADD.skeleton_path.read_text()


def test_init_default_name_in_cwd(tmp_path):
    r = judge("init", "matmul", cwd=tmp_path)
    assert r.returncode == 0 and (tmp_path / "matmul.py").is_file()


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help(flag):
    r = judge(flag)
    assert r.returncode == 0 and "submit" in r.stdout


@pytest.mark.parametrize("file, code, verdict", [(GOOD, 0, "AC"), (WRONG, 1, "WA")])
def test_a_judging_command_ends_without_the_teardown_and_leaves_nothing_behind(tmp_path, file, code, verdict):
    # judge.cli_common.leave ends `submit` with os._exit once the report is out: the exit code, the whole
    # report on a pipe, and no scratch folder left (the session and the pool remove theirs before it).
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    r = subprocess.run(
        [sys.executable, "-m", "judge", "submit", "93", str(file), "--json", "--sandbox", "process"],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "TMPDIR": str(tmp)},
    )
    assert r.returncode == code, r.stderr[-2000:]
    report = json.loads(r.stdout)  # complete: flushed before the exit
    assert report["verdict"] == verdict
    assert sorted(p.name for p in tmp.iterdir()) == []


def test_the_judge_runs_hypothesis_without_the_machines_plugins():
    # Hypothesis loads the plugins installed beside it (entry points of the group "hypothesis") when it is
    # imported; the judge turns them off (judge/__init__.py): its property tests must not depend on what else
    # the machine has (here trio's, which Selenium brings, registers a random and costs 0.1-0.2 s).
    import importlib.metadata

    plugins = sorted({e.value.split(":")[0].split(".")[0] for e in importlib.metadata.entry_points(group="hypothesis")})
    code = (
        "import json, os, sys; import judge.groups; "
        f"print(json.dumps([os.environ.get('HYPOTHESIS_NO_PLUGINS'), sorted(set({plugins!r}) & set(sys.modules))]))"
    )
    env = {k: v for k, v in os.environ.items() if k != "HYPOTHESIS_NO_PLUGINS"}
    r = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert r.returncode == 0, r.stderr[-2000:]
    flag, loaded = json.loads(r.stdout)
    assert flag and loaded == [], (flag, loaded, plugins)


def test_an_internal_errors_line_says_where_in_the_judge_it_was_raised():
    """A grading job's stderr becomes its report's message, with no traceback to read: its one line names the
    judge's innermost frame (a GPU out of memory in the judge's own comparison was known only by its text)."""
    from judge import kit
    from judge.cli_common import judge_frame

    with pytest.raises(Exception) as caught:
        kit.dtype_of("no such dtype")
    assert judge_frame(caught.value).startswith("judge/kit.py:") and judge_frame(caught.value).endswith(" in dtype_of")
    assert judge_frame(ValueError("never raised")) == ""


def test_init_into_a_missing_folder_is_one_line_and_exit_2(tmp_path):
    r = judge("init", "softmax", "missing/dir/x.py", cwd=tmp_path)
    assert r.returncode == 2
    assert "no such folder: missing/dir" in one_line(r.stderr)
    assert not (tmp_path / "missing").exists()  # init makes no folders


def test_init_under_a_file_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "a.py").write_text("")
    r = judge("init", "93", tmp_path / "a.py" / "x.py")
    assert r.returncode == 2 and "no such folder" in one_line(r.stderr)


LONG = "a" * 300  # longer than any file system's name limit (255 bytes)


@pytest.mark.parametrize(
    "args",
    [
        ("submit", "93", f"{LONG}.py"),
        ("test", "93", f"{LONG}.py"),
        ("bench", "94", f"{LONG}.py"),
        ("init", "93", f"{LONG}.py"),
        ("grade", LONG, "--problem", "93"),
        ("serve-tokens", LONG, "-o", "t.csv"),
    ],
)
def test_a_path_the_file_system_refuses_is_one_line_and_exit_2(tmp_path, args):
    r = judge(*args, cwd=tmp_path)
    assert r.returncode == 2
    assert "name too long" in one_line(r.stderr).lower()


@pytest.mark.parametrize(
    "args",
    [
        ("grade", "ROSTER", "--problem", "93", "--out", "a.py"),
        ("grade", "ROSTER", "--problem", "93", "--csv", "a.py/x.csv"),
        ("gradescope", "bundle", "--problem", "93", "-o", "a.py/autograder.zip"),
        ("serve-tokens", "ROSTER", "-o", "a.py/tokens.csv"),
    ],
)
def test_an_output_folder_that_cannot_be_made_is_one_line_and_exit_2(tmp_path, args):
    (tmp_path / "a.py").write_text("")  # a file where the output's folder should be
    roster = tmp_path / "roster"
    roster.mkdir()
    (roster / "alice.py").write_text(GOOD.read_text())
    r = judge(*[str(roster) if a == "ROSTER" else a for a in args], cwd=tmp_path)
    assert r.returncode == 2
    assert "a.py" in one_line(r.stderr) and "not a folder" in r.stderr
    assert not (tmp_path / "grading").exists()  # refused before anything was made or judged


def _without_root_override(*args):
    """The CLI with the capabilities that let root read and write any file dropped (setpriv), so that a mode
    000 file is unreadable for it as for anyone; None where that cannot be arranged."""
    import shutil

    if os.geteuid() != 0:
        return [sys.executable, "-m", "judge", *map(str, args)]
    if shutil.which("setpriv") is None:
        return None
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search", sys.executable, "-m", "judge", *map(str, args)]


def test_an_unreadable_folder_is_one_line_and_exit_2(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0)
    try:
        for args in (
            ("init", "93", locked / "x.py"),
            ("submit", "93", locked / "x.py"),
            ("grade", locked, "--problem", "93", "--out", tmp_path / "g"),
        ):
            command = _without_root_override(*args)
            if command is None:
                pytest.skip("running as root without setpriv: every file is readable here")
            r = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=600)
            assert r.returncode == 2, (args, r.stderr)
            one_line(r.stderr)
    finally:
        locked.chmod(0o755)
