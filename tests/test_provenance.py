"""Provenance by construction (judge.proofs): every passing case of an accepted file was replayed alone.

A correctness AC requires that each passing case's launches, replayed in a process where the submission's host
code never ran and on fresh inputs from the case's secret seed, computed outputs that pass the output check. The
report says so in numbers (its ``timing``): ``cases_proven`` (plus ``cases_not_replayable``, none in the
interpreter) equals ``cases_passed``. Checked here over every kernel problem's reference and accepted files, in
the process backend and in bwrap and docker where they are installed (quickly there, as tests/test_corpus.py
does), and through each way a report is made (submit and test on the command line, a grading job, which
``grade``, Gradescope, PrairieLearn and ``serve`` all run).

And the seven ways a red team told the worker from its replay (issue 40): each corpus file that uses one, with
the static scan off as with it on, ends RJ, CE or WA; and a kernel that stalls only when replayed cannot run past
the run's limit.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from judge.options import Options
from judge.problems import all_problems, find_problem
from judge.sandbox import get_backend
from judge.selftest import corpus_of
from judge.session import Session

ROOT = Path(__file__).resolve().parent.parent
ACCEPTED = [
    (p, path) for p in all_problems() if p.kind == "kernel" for verdict, path in corpus_of(p) if verdict == "AC"
]
BACKENDS = ["process", "bwrap", "docker"]
# The README's slice: each problem's reference in the process backend; the rest is "full".
SLICE = {(p.id, p.reference_path) for p in all_problems() if p.kind == "kernel"}


def proven(report) -> None:
    t = report["timing"] if isinstance(report, dict) else report.timing
    verdict = report["verdict"] if isinstance(report, dict) else report.verdict.value
    assert verdict == "AC", report["message"] if isinstance(report, dict) else report.message
    assert t["cases_passed"] > 0, t
    assert t["cases_not_replayable"] == 0, t  # (only a group Inductor compiles, on a GPU, is)
    assert t["cases_proven"] == t["cases_passed"], t
    assert t["replays"] >= t["cases_passed"], t


def _param(backend, problem, path):
    fast = backend == "process" and (problem.id, path) in SLICE
    return pytest.param(
        backend, problem, path, marks=() if fast else (pytest.mark.full,), id=f"{backend}-{problem.id}-{path.stem}"
    )


@pytest.mark.corpus
@pytest.mark.parametrize("backend,problem,path", [_param(b, p, path) for b in BACKENDS for p, path in ACCEPTED])
def test_every_passing_case_of_an_accepted_file_was_replayed(backend, problem, path):
    why = get_backend(backend).unavailable()
    if why is not None:
        pytest.skip(f"sandbox {backend} unavailable: {why}")
    options = Options(sandbox=backend, seed=1, device="cpu", interpret=True, speed=False, quick=backend != "process")
    proven(Session(problem, path, options).run())


def _cli(*args) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "judge", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=900,
    )
    return json.loads(out.stdout)


@pytest.mark.corpus
@pytest.mark.parametrize("how", ["submit", "test", "grading job"])
def test_every_way_to_a_report_replays_every_passing_case(how, tmp_path):
    reference = find_problem("94").reference_path
    if how == "submit":
        report = _cli("submit", 94, reference, "--json", "--sandbox", "process", "--seed", 2, "--device", "cpu")
    elif how == "test":
        report = _cli("test", 94, reference, "--json", "--sandbox", "process", "--seed", 2, "--device", "cpu")
    else:
        from judge.grading.job import run_subprocess

        report = run_subprocess(
            {
                "problem": 94,
                "path": str(reference),
                "seed": 2,
                "device": "cpu",
                "interpret": True,
                "sandbox": "process",
            },
            timeout=900,
        )
    proven(report)


R93 = ROOT / "problems" / "093-vector-add" / "submissions"
# One file per kind of finding runs in the README's command (a pointer made an integer, the replay check, data
# from outside); the others, which each close one more way through the same layers, under -m full.
_FULL = pytest.mark.full
CHANNELS = [
    pytest.param("rejected/exploit7_pointer_compared_with_int.py", "RJ", "converts a pointer to an integer (line"),
    pytest.param(
        "rejected/exploit7_output_at_aligned_address.py", "RJ", "converts a pointer to an integer (line", marks=_FULL
    ),
    pytest.param("rejected/exploit7_data_key.py", "RJ", "the replay check"),
    pytest.param(
        "rejected/exploit7_host_address_as_pointer.py", "RJ", "converts an integer to a pointer (line", marks=_FULL
    ),
    pytest.param("wrong_answer/exploit7_flag_written_through_proc_mem.py", "WA", "", marks=_FULL),
    pytest.param("rejected/exploit7_string_past_the_record.py", "RJ", "data from outside your kernels reached out"),
    pytest.param(
        "rejected/exploit7_nan_payload_argument.py", "RJ", "data from outside your kernels reached out", marks=_FULL
    ),
    pytest.param(
        "rejected/exploit7_constexpr_set_order.py", "RJ", "a set (its order follows its items' hashes", marks=_FULL
    ),
]


@pytest.mark.corpus
@pytest.mark.parametrize("scan", [False, pytest.param(True, marks=pytest.mark.full)], ids=["scan-off", "scan-on"])
@pytest.mark.parametrize("name,verdict,text", CHANNELS, ids=[Path(c.values[0]).stem for c in CHANNELS])
def test_each_way_to_tell_the_worker_from_its_replay_fails(name, verdict, text, scan):
    options = Options(sandbox="process", seed=1, device="cpu", interpret=True, speed=False, static_scan=scan)
    report = Session(find_problem("93"), R93 / name, options).run()
    assert report.verdict.value in ("RJ", "CE", "WA"), f"{report.verdict.value}: {report.message}"
    assert report.verdict.value == verdict and text in report.message, f"{report.verdict.value}: {report.message}"


@pytest.mark.corpus
def test_a_kernel_that_stalls_only_when_replayed_stops_at_the_run_limit():
    path = R93 / "time_limit_exceeded" / "exploit7_spins_only_when_replayed.py"
    options = Options(
        sandbox="process",
        seed=1,
        device="cpu",
        interpret=True,
        speed=False,
        limits={"run_seconds_interpret": 30, "run_seconds": 30},
    )
    started = time.monotonic()
    report = Session(find_problem("93"), path, options).run()
    elapsed = time.monotonic() - started
    assert report.verdict.value == "TLE", f"{report.verdict.value}: {report.message}"
    assert elapsed < 40, f"the run took {elapsed:.1f} s under a run limit of 30 s"
