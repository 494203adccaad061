"""Every self-test submission of every problem gets its declared verdict.

Kattis and DMOJ style: the directory a submission sits in names the verdict it
must get; the reference solution must be accepted; an '# expect:' line must be
found in what the report says. Judged in Triton's interpreter on the CPU here;
tests/gpu/ runs the same corpus compiled on a GPU.
"""

import os

import pytest

from judge.options import Options
from judge.problems import all_problems
from judge.selftest import corpus_of, judge_one

ITEMS = [(p, verdict, path) for p in all_problems() for verdict, path in corpus_of(p)]
# The corpus runs in full under the process backend, and in quick mode (each
# group's edge cases and two drawn ones) under the sandboxes JUDGE_TEST_SANDBOXES
# names (CI: docker and bwrap), which proves them with every kind of submission.
SANDBOXES = [s for s in os.environ.get("JUDGE_TEST_SANDBOXES", "").split(",") if s]
RUNS = [("process", item) for item in ITEMS] + [(s, item) for s in SANDBOXES for item in ITEMS]
# The README's test command judges a representative slice (per problem: the
# reference and the first file of each verdict directory, in the process
# backend); the rest carries the "full" marker, which CI runs after it.
FIRSTS = {(p.id, verdict): path for p, verdict, path in reversed(ITEMS)}
SLICE = {("process", p.id, path) for p, verdict, path in ITEMS if FIRSTS[(p.id, verdict)] == path}


def _param(run):
    sandbox, (p, verdict, path) = run
    marks = () if (sandbox, p.id, path) in SLICE else (pytest.mark.full,)
    return pytest.param(run, marks=marks, id=_id(run))


def _id(run):
    sandbox, (p, verdict, path) = run
    return f"{sandbox}-{p.id}-{path.parent.name}-{path.stem}"


@pytest.mark.corpus
@pytest.mark.parametrize("run", [_param(r) for r in RUNS])
def test_declared_verdict(run):
    sandbox, (problem, expected, path) = run
    device = os.environ.get("JUDGE_TEST_DEVICE", "cpu")
    options = Options(
        device=device,
        interpret=device == "cpu",
        seed=int(os.environ.get("JUDGE_TEST_SEED", "1")),
        sandbox=sandbox,
        quick=sandbox != "process",
        speed=False,
    )
    check = judge_one(problem, expected, path, options)
    detail = f"{check.verdict}: {check.message}"
    assert check.verdict == check.expected, detail  # the folder's, or the file's "# verdict-cpu:" line
    assert not check.missing_text, f"report lacks {check.missing_text}; {detail}"
