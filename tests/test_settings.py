"""judge.settings: the one place the judge reads its JUDGE_* environment, a dozen names at most, each with the
default docs/staff/settings.md gives."""

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from judge.settings import REPO_ROOT, SettingError, Settings, from_environ

JUDGE = Path(__file__).resolve().parents[1] / "judge"
NAME = re.compile(r"JUDGE_[A-Z0-9_]+")


def test_unset_every_setting_has_its_default(monkeypatch):
    monkeypatch.setenv("HOME", "/home/someone")
    s = from_environ({})
    assert s == Settings(cache_dir=Path("/home/someone/.cache/triton-judge"), lock_dir=Path("/tmp"))
    assert s.problems == REPO_ROOT / "problems" and s.workers is None and s.replay_workers is None
    assert (s.kernel_cache_gb, s.submission_cache_gb, s.pool) == (20.0, 4.0, "auto")
    assert s.docker_image is s.serve_token is s.timeline is None and not s.debug
    # Empty is unset too.
    assert from_environ({"JUDGE_WORKERS": "", "JUDGE_CACHE_DIR": "", "JUDGE_DEBUG": ""}) == s
    assert from_environ({"XDG_RUNTIME_DIR": "/run/user/7"}).lock_dir == Path("/run/user/7")


def test_each_setting_is_read_from_its_variable():
    s = from_environ(
        {
            "JUDGE_PROBLEMS": "/course/problems",
            "JUDGE_CACHE_DIR": "/c",
            "JUDGE_LOCK_DIR": "/l",
            "XDG_RUNTIME_DIR": "/run/user/7",
            "JUDGE_WORKERS": "3",
            "JUDGE_REPLAY_WORKERS": "2",
            "JUDGE_KERNEL_CACHE_GB": "2.5",
            "JUDGE_SUBMISSION_CACHE_GB": "0.5",
            "JUDGE_DOCKER_IMAGE": "img",
            "JUDGE_POOL": "off",
            "JUDGE_SERVE_TOKEN": "tok",
            "JUDGE_TIMELINE": "/t",
            "JUDGE_DEBUG": "1",
        }
    )
    assert s == Settings(
        problems=Path("/course/problems"),
        cache_dir=Path("/c"),
        lock_dir=Path("/l"),
        workers=3,
        replay_workers=2,
        kernel_cache_gb=2.5,
        submission_cache_gb=0.5,
        docker_image="img",
        pool="off",
        serve_token="tok",
        timeline="/t",
        debug=True,
    )
    assert from_environ({"JUDGE_WORKERS": "0"}).workers == 1  # at least one
    assert from_environ({"JUDGE_KERNEL_CACHE_GB": "lots"}).kernel_cache_gb == 20.0  # not a number: the default
    assert from_environ({"JUDGE_KERNEL_CACHE_GB": "-3"}).kernel_cache_gb == 0.0
    with pytest.raises(SettingError, match="JUDGE_REPLAY_WORKERS=two"):
        from_environ({"JUDGE_REPLAY_WORKERS": "two"})


def test_a_bad_setting_is_a_usage_error_in_one_line(repo_root):
    proc = subprocess.run(
        [sys.executable, "-m", "judge", "list"],
        cwd=repo_root,
        capture_output=True,
        text=True,
        env={**os.environ, "JUDGE_WORKERS": "many"},
        timeout=120,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == "judge: JUDGE_WORKERS=many: give a whole number of workers (1 or more)"


def _python_files():
    return sorted(p for p in JUDGE.rglob("*.py") if "__pycache__" not in p.parts)


def test_the_judge_reads_a_dozen_names_at_most_each_in_the_settings_module_only():
    # The names anywhere in judge/ (code, docstrings, help, templates): those the settings module reads.
    names = set()
    for path in JUDGE.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            names |= set(NAME.findall(path.read_text(errors="replace")))
    settings_text = (JUDGE / "settings.py").read_text()
    assert names == set(NAME.findall(settings_text)) and len(names) <= 12, sorted(names)
    # A bare name as a string anywhere else (os.environ.get("JUDGE_X"), env["JUDGE_X"] = ..., ENV = "JUDGE_X") is
    # a read or a write of the environment outside judge.settings.
    bare = []
    for path in _python_files():
        if path.name == "settings.py" and path.parent == JUDGE:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and NAME.fullmatch(node.value):
                bare.append(f"{path.relative_to(JUDGE.parent)}:{node.lineno} {node.value}")
    assert bare == []
