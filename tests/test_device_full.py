"""A GPU that other work filled is no verdict against the file (judge.shared.oom, judge.rules.gpu_full), on the
real GPU, and the host's admission (judge.gpu_admission) sees memory that a program outside the judges holds.
Runs where JUDGE_TEST_DEVICE=cuda (tests/gpu/calls/13-workers.sh, part `devicefull`); skipped on the CPU,
which has no device to fill."""

import os
import subprocess
import sys
import threading
import time

import pytest

from judge.gpu_admission import Admission
from judge.options import Options
from judge.problems import find_problem
from judge.progress import NoProgress
from judge.session import Session

pytestmark = pytest.mark.skipif(
    os.environ.get("JUDGE_TEST_DEVICE") != "cuda", reason="needs a GPU (JUDGE_TEST_DEVICE=cuda)"
)

# Makes its CUDA context, says "ready"; on a line from stdin holds all of the device's free memory but LEAVE
# bytes and says "held"; lets go when its stdin closes.
HOG = """
import sys, torch
torch.cuda.init(); torch.empty(1, device="cuda")
print("ready", flush=True)
sys.stdin.readline()
free, _ = torch.cuda.mem_get_info()
held = torch.empty(max(0, free - int(sys.argv[1])), dtype=torch.uint8, device="cuda")
print("held", held.numel(), flush=True)
sys.stdin.read()
"""


class Stages(NoProgress):
    def __init__(self):
        self.seen = []

    def stage(self, text):
        self.seen.append(text)


def _hog(leave: int) -> subprocess.Popen:
    hog = subprocess.Popen(
        [sys.executable, "-c", HOG, str(leave)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert hog.stdout.readline().startswith("ready")
    return hog


def _fill(hog) -> None:
    hog.stdin.write("go\n")
    hog.stdin.flush()
    assert hog.stdout.readline().startswith("held")


def _judge(progress=None):
    problem = find_problem("94")
    options = Options(
        device="cuda", interpret=False, sandbox="process", seed=1, workers=1, speed=False, progress=progress
    )
    return Session(problem, problem.reference_path, options).run()


def _judged_while_a_hog_fills_the_gpu(leave: int):
    """The reference judged; once its memory is reserved (its entry held in the ledger) another program takes
    all of the device's free memory but ``leave``: what the judge was promised is gone while it runs."""
    hog = _hog(leave)
    try:
        got = {}
        t = threading.Thread(target=lambda: got.update(report=_judge()))
        t.start()
        while t.is_alive() and not any(e.held for e in Admission(0).snapshot()):
            time.sleep(0.05)
        time.sleep(1.0)
        _fill(hog)
        t.join(600)
        return got["report"]
    finally:
        hog.stdin.close()
        hog.wait(timeout=60)


def test_an_accepted_file_on_a_gpu_that_others_filled_is_ie_and_never_a_verdict_against_it():
    # 3 GiB left: the contexts fit, the largest cases may not, and the judge then sees under 2 GiB free
    # (judge.rules.FULL_BELOW). 1 GiB left: new contexts may not fit. Either way no verdict against the file: IE
    # (judged again by judge_file), or AC where it all fit.
    seen = {}
    for leave in (3 << 30, 1 << 30):
        report = _judged_while_a_hog_fills_the_gpu(leave)
        seen[leave >> 20] = (report.verdict.value, report.message)
        print(f"{leave >> 20} MiB left: {report.verdict.value}: {report.message}")  # (for tests/gpu/RESULTS.md)
    assert all(verdict in ("IE", "AC") for verdict, _ in seen.values()), seen
    assert any(verdict == "IE" for verdict, _ in seen.values()), f"nothing was tripped: {seen}"
    # Once the memory is back, the same file, seed and cases: accepted.
    assert _judge().verdict.value == "AC"


def test_a_judge_waits_for_memory_another_program_holds_and_then_judges():
    """Memory held outside the judges (used on the device, reserved by none) is not handed out: a judge started
    beside such a program says it waits, starts nothing, and is accepted once the program lets go."""
    hog = _hog(1 << 30)
    try:
        _fill(hog)
        stages = Stages()
        got = {}
        t = threading.Thread(target=lambda: got.update(report=_judge(stages)))
        t.start()
        t.join(15)
        assert t.is_alive() and any(s and s.startswith("waiting for the GPU") for s in stages.seen), stages.seen
    finally:
        hog.stdin.close()
        hog.wait(timeout=60)
    t.join(600)
    report = got["report"]
    assert report.verdict.value == "AC" and report.timing["gpu_admission_wait_seconds"] >= 10, report.timing
