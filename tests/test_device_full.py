"""A GPU that other work filled is no verdict against the file (judge.shared.oom, judge.rules.gpu_full), on the
real GPU: another process holds all of its memory but a little while the reference of softmax is judged. On an
H100 with 16 jobs at once, such errors had made accepted files MLE, RJ and RTE (tests/gpu/RESULTS.md,
2026-12-06, ninth session). Runs where JUDGE_TEST_DEVICE=cuda (tests/gpu/calls/13-workers.sh, part
`devicefull`); skipped on the CPU, which has no device to fill."""

import os
import subprocess
import sys

import pytest

from judge.options import Options
from judge.problems import find_problem
from judge.session import Session

pytestmark = pytest.mark.skipif(os.environ.get("JUDGE_TEST_DEVICE") != "cuda",
                                reason="needs a GPU (JUDGE_TEST_DEVICE=cuda)")

# Holds all of the device's free memory but LEAVE bytes, until its stdin closes.
HOG = """
import sys, torch
free, _ = torch.cuda.mem_get_info()
held = torch.empty(max(0, free - int(sys.argv[1])), dtype=torch.uint8, device="cuda")
print("held", held.numel(), flush=True)
sys.stdin.read()
"""


def _judge(**kw):
    problem = find_problem("94")
    options = Options(device="cuda", interpret=False, sandbox="process", seed=1, workers=1, speed=False, **kw)
    return Session(problem, problem.reference_path, options).run()


def _judged_beside_a_hog(leave: int):
    hog = subprocess.Popen([sys.executable, "-c", HOG, str(leave)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           text=True)
    try:
        assert hog.stdout.readline().startswith("held")
        return _judge()
    finally:
        hog.stdin.close()
        hog.wait(timeout=60)


def test_an_accepted_file_on_a_gpu_that_others_filled_is_ie_and_never_a_verdict_against_it():
    # 3 GiB left: the judge's and the worker's CUDA contexts fit (about 0.5 GiB each), the largest cases may not,
    # and the judge then sees under 2 GiB free (judge.rules.FULL_BELOW). 1 GiB left: the contexts themselves may
    # not fit. Either way no verdict against the file: IE (judged again), or AC where it all fit.
    seen = {}
    for leave in (3 << 30, 1 << 30):
        report = _judged_beside_a_hog(leave)
        seen[leave >> 20] = (report.verdict.value, report.message)
        print(f"{leave >> 20} MiB left: {report.verdict.value}: {report.message}")  # (for tests/gpu/RESULTS.md)
    assert all(verdict in ("IE", "AC") for verdict, _ in seen.values()), seen
    assert any(verdict == "IE" for verdict, _ in seen.values()), f"nothing was tripped: {seen}"
    # Once the memory is back, the same file, seed and cases: accepted.
    assert _judge().verdict.value == "AC"
