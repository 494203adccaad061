"""problem.toml is checked strictly: a misspelt key is an error that names it, never a silent default."""

import shutil

import pytest

from judge import problem_schema
from judge.problems import ProblemError, find_problem, load_problem


def _copy(tmp_path, edit):
    src = find_problem("93").directory
    dst = tmp_path / src.name
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("submissions"))
    toml = dst / "problem.toml"
    toml.write_text(edit(toml.read_text()))
    return dst


def test_a_misspelt_limit_is_named_with_the_closest_key(tmp_path):
    d = _copy(tmp_path, lambda t: t.replace("case_seconds = 60\n", "case_second = 60\n", 1))
    with pytest.raises(ProblemError, match=r"unknown key 'limits.case_second' \(did you mean 'case_seconds'\?\)"):
        load_problem(d)


@pytest.mark.parametrize(
    "edit,text",
    [
        (lambda t: t.replace('title = "Vector addition"', "title = 3"), "'title' must be a string"),
        (lambda t: t.replace("max_examples = 25", "max_exampels = 25"), "unknown key 'groups[0].max_exampels'"),
        (lambda t: t.replace("budget_seconds = 8", "budget_seconds = 8\nbudget = 3"), "unknown key 'bench.budget'"),
        (lambda t: t.replace('scope = "element"', 'scope = "rows"'), "scope must be one of"),
        (lambda t: t.replace("arity = 2\n", ""), "missing 'arity'"),
    ],
)
def test_other_mistakes(tmp_path, edit, text):
    with pytest.raises(
        ProblemError, match=text.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[").replace("]", r"\]")
    ):
        load_problem(_copy(tmp_path, edit))


def test_speed_points_need_bench_shapes_and_the_golden_speed_interface(tmp_path):
    d = _copy(tmp_path, lambda t: t.split("[bench]")[0] + "[[groups]]" + t.split("[[groups]]", 1)[1])
    with pytest.raises(ProblemError, match="needs \\[bench\\] shapes"):
        load_problem(d)
    d2 = _copy(tmp_path / "b", lambda t: t)
    golden = d2 / "golden.py"
    golden.write_text(golden.read_text().replace("def bench_args(p):", "def bench_args_(p):"))
    with pytest.raises(ProblemError, match=r"must define bench_args\(\)"):
        load_problem(d2).golden  # noqa: B018


def test_every_real_problem_passes_the_schema():
    import tomllib

    for key in ("93", "94", "95", "96", "97", "98", "99", "101", "102", "103", "104"):
        p = find_problem(key)
        assert problem_schema.check(tomllib.loads((p.directory / "problem.toml").read_text()), "x") == []


def test_verify_names_a_broken_package_and_passes_a_sound_one(tmp_path):
    import os
    import subprocess
    import sys

    root = tmp_path / "problems"
    root.mkdir()
    _copy(root, lambda t: t.replace("output_kb = 1024", "output_kib = 1024"))
    env = {**os.environ, "JUDGE_PROBLEMS": str(root)}
    proc = subprocess.run(
        [sys.executable, "-m", "judge", "verify", "--no-corpus"], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "BAD 093-vector-add problem.toml" in proc.stdout and "'limits.output_kib'" in proc.stdout
    ok = subprocess.run([sys.executable, "-m", "judge", "verify", "093", "--no-corpus"], capture_output=True, text=True)
    assert ok.returncode == 0 and "every package is sound" in ok.stdout, ok.stdout + ok.stderr


def _copy_answers(tmp_path, edit):
    src = find_problem("101").directory
    dst = tmp_path / src.name
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("submissions"))
    toml = dst / "problem.toml"
    toml.write_text(edit(toml.read_text()))
    return dst


@pytest.mark.parametrize(
    "edit,text",
    [
        (lambda t: t.replace('kind = "answers"', 'kind = "answer"'), "kind must be one of kernel, answers"),
        (
            lambda t: t.replace('unit = "programs"\npoints = 20', 'units = "programs"\npoints = 20', 1),
            "unknown key 'parts[0].units' (did you mean 'unit'?)",
        ),
        (lambda t: t.replace("value = 97\n", "", 1), "missing 'parts[0].value'"),
        (lambda t: t.replace("value = 97\n", 'value = "97"\n', 1), "'parts[0].value' must be a number"),
        (lambda t: t.replace("values = [96]\n", "", 1), "needs 'values' or 'ratios'"),
        (lambda t: t.replace("values = [96]", "values = [97]", 1), "is within the tolerance of the answer"),
        (lambda t: t.replace("points = 20", "points = 25", 1), "the parts' points must total 100, not 105"),
        (lambda t: t + "\n[score]\nspeed_points = 30\n", "'score.speed_points' must be 0"),
        (lambda t: t.replace('name = "programs"', 'name = "Programs!"', 1), "lower-case letters, digits and _"),
        (lambda t: t.replace('name = "masked_lanes"', 'name = "programs"', 1), "a second part named 'programs'"),
        (lambda t: t.replace('kind = "answers"', 'kind = "answers"\nentry_point = "add"'), "unknown key 'entry_point'"),
    ],
)
def test_answers_problem_mistakes_are_named(tmp_path, edit, text):
    import re

    with pytest.raises(ProblemError, match=re.escape(text)):
        load_problem(_copy_answers(tmp_path, edit))


# The call modes' keys (problems/README.md, "Call modes"), on a copy of 93 with a grad group added.
GRAD = """
[grad]
wrt = [0, 1]
outputs = [{ name = "grad_x", dtype = "input" }, { name = "grad_y", dtype = "input" }]
"""


def _before_limits(table: str):
    return lambda t: t.split("[limits]")[0] + table + "[limits]" + t.split("[limits]")[1]


@pytest.mark.parametrize(
    "edit,text",
    [
        (
            lambda t: t.replace('name = "small-ragged"', 'name = "small-ragged"\ncall = "compiled"', 1),
            "groups[0].call must be one of",
        ),
        (
            lambda t: t.replace('name = "small-ragged"', 'name = "small-ragged"\ncall = "grad"', 1),
            "needs a [grad] table",
        ),
        (lambda t: t.replace("arity = 2\n", 'arity = 2\nfactory = "module"\n'), "factory must be one of namespace"),
        (_before_limits('[rules]\nallow = ["torch._C"]\n'), "rules.allow may name torch.library"),
        (_before_limits(GRAD.replace("[0, 1]", "[0, 2]")), "grad.wrt must list argument indices"),
        (_before_limits(GRAD.replace(', { name = "grad_y", dtype = "input" }', "")), "one gradient per grad.wrt entry"),
        (_before_limits("[compile]\nbackend = 3\n"), "'compile.backend' must be a string"),
        (_before_limits("[compile]\nbackends = 'eager'\n"), "unknown key 'compile.backends'"),
    ],
)
def test_call_mode_mistakes(tmp_path, edit, text):
    with pytest.raises(
        ProblemError, match=text.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[").replace("]", r"\]")
    ):
        load_problem(_copy(tmp_path, edit))


def test_call_modes_load():
    p = find_problem("99")
    assert p.factory == "namespace" and p.entry_arity == 1 and p.arity == 2
    assert p.scan_allow == ("torch.library",)
    assert [g.call for g in p.groups] == ["direct", "direct", "direct", "compile", "grad"]
    assert p.compile_backend(interpret=True) == "eager" and p.compile_backend(interpret=False) == "inductor"
    assert [o.name for o in p.outputs_for(p.groups[-1])] == ["out", "grad_x", "grad_y"]
    assert [o.name for o in p.outputs_for(p.groups[0])] == ["out"]
    assert find_problem("93").factory is None and find_problem("93").entry_arity == 2
