"""One submission's cases spread over several workers give the verdicts one worker gives (issue 13).

With a fixed seed, the same cases are drawn, in the same order, and the
first that fails is shrunk the same way: the other workers only run the
group's cases ahead. Compared here on files that end each way, including a
hang (a worker death freezes the group), a cache by address (the refill), and
a cheat only the replay catches.
"""

import os
from pathlib import Path

import pytest

from judge.options import Options
from judge.problems import find_problem
from judge.session import Session
from judge.settings import settings

ROOT = Path(__file__).resolve().parents[1]
S93 = ROOT / "problems" / "093-vector-add" / "submissions"
FILES = [
    ("93", ROOT / "reference" / "093-vector-add.py"),
    ("93", S93 / "wrong_answer" / "tail_dropped.py"),
    ("93", S93 / "wrong_answer" / "ignores_strides.py"),
    ("93", S93 / "rejected" / "exploit_cache_by_address.py"),
    ("93", S93 / "rejected" / "exploit2_noop_proc_mem_tensor.py"),
    ("93", S93 / "runtime_error" / "raises.py"),
    ("93", S93 / "time_limit_exceeded" / "python_spin.py"),
    ("94", ROOT / "problems" / "094-softmax" / "submissions" / "wrong_answer" / "hint_masked_tail_other.py"),
]


def _judge(pid, path, workers, case_seconds=10):
    limits = {"case_seconds_interpret": case_seconds, "startup_seconds": 30}
    report = Session(find_problem(pid), path, Options(sandbox="process", seed=4, workers=workers, limits=limits)).run()
    return report, [(g.name, g.verdict.value, g.case, g.passed, g.skipped) for g in report.groups]


@pytest.mark.corpus
@pytest.mark.parametrize(
    "pid,path",
    [f if i < 2 else pytest.param(*f, marks=pytest.mark.full) for i, f in enumerate(FILES)],
    ids=[f[1].stem for f in FILES],
)
def test_two_workers_give_the_verdicts_of_one(pid, path):
    if not path.exists():
        pytest.skip(f"{path.name} is not in the corpus")
    one, groups_one = _judge(pid, path, 1)
    two, groups_two = _judge(pid, path, 2)
    assert two.timing.get("workers") == 2
    assert one.verdict == two.verdict
    # The same groups fail on the same shrunk cases (a replay's message quotes its own fresh values).
    assert groups_one == groups_two


# Right in its own process on its first two calls (a case and its refill) by arithmetic on the inputs' bytes,
# which only the replay check sees, and plainly wrong from the third call on. The replay of the group's first
# case runs beside the next cases (judge.session_replays.start), so the wrong case fails first in time; the
# group's failure must still be the replay's finding, which comes first in the cases' order.
REPLAYED_THEN_WRONG = """
import numpy as np
import torch
import triton
import triton.language as tl

CALLS = [0]


@triton.jit
def _copy(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=mask), mask=mask)


def add(x, y):
    CALLS[0] += 1
    n = x.numel()
    out = torch.empty_like(x)
    if CALLS[0] > 2:
        _copy[(triton.cdiv(n, 1024),)](x.contiguous(), out, n, BLOCK=1024)  # x, not x + y
        return out
    dt = {torch.float32: np.float32, torch.float16: np.float16}[x.dtype]
    sums = (np.frombuffer(memoryview(x.contiguous().numpy()).tobytes(), dtype=dt)
            + np.frombuffer(memoryview(y.contiguous().numpy()).tobytes(), dtype=dt))
    staged = torch.frombuffer(bytearray(sums.tobytes()), dtype=x.dtype)
    _copy[(triton.cdiv(n, 1024),)](staged, out, n, BLOCK=1024)
    return out.view(x.shape) if out.shape != x.shape else out
"""


@pytest.mark.corpus
def test_a_replays_finding_is_the_groups_failure_though_a_later_case_failed_first(tmp_path):
    path = tmp_path / "replayed_then_wrong.py"
    path.write_text(REPLAYED_THEN_WRONG)
    # (NumPy is refused by the static scan, which is not what is tested here.)
    report = Session(
        find_problem("93"),
        path,
        Options(sandbox="process", seed=4, workers=1, static_scan=False, limits={"case_seconds_interpret": 10}),
    ).run()
    first = report.groups[0]
    assert first.verdict.value == "RJ" and "the replay check" in first.message, first.message


# Honest, but the record of its first two calls (a case and its refill) overflows its bound (5000 fills of a
# scratch buffer): that case's replay cannot go through. Every passing case must be replayed (judge.proofs), so
# the case is run once more in the worker and that record replayed: the group passes, every case proven.
FIRST_CALLS_FLOODED = (
    (ROOT / "reference" / "093-vector-add.py")
    .read_text()
    .replace(
        "def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:\n",
        "CALLS = [0]\n\n\ndef add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:\n"
        "    CALLS[0] += 1\n"
        "    if CALLS[0] <= 2:\n"
        "        scratch = torch.empty(4, device=x.device)\n"
        "        for _ in range(5000):\n"
        "            scratch.fill_(0.0)\n",
    )
)


@pytest.mark.corpus
def test_a_case_whose_record_could_not_be_replayed_is_run_again_and_replayed(tmp_path):
    assert "CALLS[0] <= 2" in FIRST_CALLS_FLOODED
    path = tmp_path / "first_calls_flooded.py"
    path.write_text(FIRST_CALLS_FLOODED)
    report = Session(
        find_problem("93"),
        path,
        Options(sandbox="process", seed=3, workers=1, group="block-edges", limits={"case_seconds_interpret": 10}),
    ).run()
    assert report.verdict.value == "AC", report.message
    t = report.timing
    assert t["cases_proven"] == t["cases_passed"] > 1 and t["replays"] == t["cases_passed"] + 1, t


# Flooded at every call: no record of it can be replayed, so no case can be proven.
ALWAYS_FLOODED = FIRST_CALLS_FLOODED.replace("if CALLS[0] <= 2:", "if CALLS[0] > 0:")


@pytest.mark.corpus
def test_a_case_never_replayable_is_rejected(tmp_path):
    path = tmp_path / "always_flooded.py"
    path.write_text(ALWAYS_FLOODED)
    report = Session(
        find_problem("93"),
        path,
        Options(sandbox="process", seed=3, workers=1, group="block-edges", limits={"case_seconds_interpret": 10}),
    ).run()
    assert report.verdict.value == "RJ", report.message
    assert "could not be replayed alone on fresh inputs, twice" in report.message, report.message


@pytest.mark.parametrize(
    "cores, gib, cap_mb, expected",
    [
        (16, 139.8, 8192, 12),  # the H200's host: one per core but four, at most 12
        (16, 79.6, 8192, 9),  # an H100 of 80 GB: the device's memory at 8 GB a worker
        (16, 79.6, 16384, 4),  # a problem that lets each worker take 16 GB: fewer of them
        (8, 139.8, 8192, 4),  # a small host: its cores
        (64, 139.8, 8192, 12),  # a big host: the cap
        (2, 23.0, 8192, 1),  # two cores: one
    ],
)
def test_the_number_of_gpu_workers_follows_the_cores_and_the_devices_memory_at_the_problems_cap(
    cores, gib, cap_mb, expected, monkeypatch
):
    from judge import options

    monkeypatch.delenv("JUDGE_WORKERS", raising=False)
    monkeypatch.setattr("os.cpu_count", lambda: cores)
    assert options.auto_workers("cuda", False, gib, cap_mb) == expected
    monkeypatch.setenv("JUDGE_WORKERS", "3")
    settings.cache_clear()  # (the settings are read once: read them again)
    assert options.auto_workers("cuda", False, gib, cap_mb) == 3


def test_a_submissions_workers_are_counted_at_its_problems_gpu_memory_cap(monkeypatch):
    """session_workers passes the problem's own [limits] gpu_memory_mb: a problem with a bigger cap gets fewer
    workers on the same device, so its workers together never hold more than the device."""
    from dataclasses import replace

    from judge import options

    monkeypatch.delenv("JUDGE_WORKERS", raising=False)
    monkeypatch.setattr("os.cpu_count", lambda: 16)
    problem = find_problem("98")
    opts = Options(device="cuda", interpret=False)
    assert options.session_workers(problem, opts, 139.8) == 12
    big = replace(problem, limits={**problem.limits, "gpu_memory_mb": 32768})
    assert options.session_workers(big, opts, 139.8) == 4


@pytest.mark.parametrize(
    "cores, device, interpret, jobs, expected",
    [
        (16, "cuda", False, 5, 2),  # the H200's host: its 12 test workers split between 5 files
        (16, "cuda", False, 1, 12),
        (16, "cuda", False, 24, 1),
        (2, "cpu", True, 2, 1),  # this machine: one each, as before
    ],
)
def test_files_judged_at_once_share_the_hosts_workers(cores, device, interpret, jobs, expected, monkeypatch):
    """`selftest --jobs N` judges N files in `submit` children; each took a whole host's workers (96 compiling
    at once for --jobs 8 on the H200), now its share; JUDGE_WORKERS, when set, is left to say."""
    from judge import selftest

    monkeypatch.delenv("JUDGE_WORKERS", raising=False)
    monkeypatch.setattr("os.cpu_count", lambda: cores)
    base = Options(device=device, interpret=interpret)
    assert selftest.child_workers(base, jobs, 139.8) == expected
    monkeypatch.setenv("JUDGE_WORKERS", "3")
    settings.cache_clear()  # (the settings are read once: read them again)
    assert selftest.child_workers(base, jobs, 139.8) is None


def test_a_grading_commands_judge_workers_gives_every_job_that_many(monkeypatch):
    # judge grade splits the host's cores between the jobs sharing a GPU; JUDGE_WORKERS set for the command
    # overrides the split (tests/bench/grade_throughput.py --job-workers compares counts that way).
    from judge.grading.executors import workers_per_job

    monkeypatch.delenv("JUDGE_WORKERS", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    assert workers_per_job([0] * 12) == 1  # 16 cores, 12 jobs on one GPU
    assert workers_per_job([0] * 2) == 4
    assert workers_per_job([None, None]) is None  # interpreter jobs: each decides
    assert workers_per_job([0]) is None  # one job at a time: it decides, as a lone submit does
    assert workers_per_job([0, 1]) == 4  # two GPUs, a job on each: the cores split between them
    monkeypatch.setenv("JUDGE_WORKERS", "2")
    settings.cache_clear()  # (the settings are read once: read them again)
    assert workers_per_job([0] * 12) == 2


# On views (the third group) PyTorch's add and no kernel (RJ, which stops the later groups), and slow on long
# vectors: the last group's first case, which a lane takes at the start (judge.lanes: Lanes.early), is still
# running when the views' failure stops the later groups.
RJ_VIEWS_SLOW_LONG = (
    (ROOT / "reference" / "093-vector-add.py")
    .read_text()
    .replace(
        "    n = x.numel()\n    out = torch.empty(n, dtype=x.dtype, device=x.device)\n",
        "    n = x.numel()\n"
        "    if x.storage_offset() or not x.is_contiguous():\n"
        "        return x + y\n"
        "    if n >= 50000:\n"
        "        import time\n"
        "        time.sleep(30)\n"
        "    out = torch.empty(n, dtype=x.dtype, device=x.device)\n",
        1,
    )
)


@pytest.mark.corpus
def test_a_case_run_ahead_for_a_group_that_will_not_be_judged_is_not_waited_for(tmp_path):
    import time

    assert RJ_VIEWS_SLOW_LONG != (ROOT / "reference" / "093-vector-add.py").read_text()
    path = tmp_path / "rj_views_slow_long.py"
    path.write_text(RJ_VIEWS_SLOW_LONG)
    t0 = time.monotonic()
    two, groups_two = _judge("93", path, 2, case_seconds=60)  # (a limit past the sleep: it is not what ends it)
    elapsed = time.monotonic() - t0
    assert two.verdict.value == "RJ" and [g[1] for g in groups_two[:3]] == ["AC", "AC", "RJ"], groups_two
    assert two.timing["cases_ahead"] >= 1  # the early case was taken
    assert elapsed < 30, elapsed  # its 30-s sleep was not waited for: its worker was stopped
    one, groups_one = _judge("93", path, 1)
    assert one.verdict == two.verdict and groups_one == groups_two


# Loads in the first of its processes to import it and exits at import in every other: a file that does not load
# in each process it is given. Which lane's worker imports first is a race; the verdict must not depend on it.
LOADS_ONCE = """
import os

try:
    os.close(os.open({marker!r}, os.O_CREAT | os.O_EXCL))
except FileExistsError:
    os._exit(3)


def add(x, y):
    return x + y
"""


@pytest.mark.parametrize("workers", [2, 3])
def test_a_file_that_does_not_load_in_every_worker_fails_as_in_the_first(tmp_path, workers):
    path = tmp_path / "loads_once.py"
    path.write_text(LOADS_ONCE.format(marker=str(tmp_path / "loaded")))
    report, _ = _judge("93", path, workers)
    assert report.verdict.value == "RTE", (report.verdict, report.message)
    assert "exited with status 3" in report.message, report.message
