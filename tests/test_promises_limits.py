"""The limits' promises, on real submission files judged in Triton's interpreter.

- A case that runs past the per-case limit (`--time-limit`, a problem's `case_seconds`) is TLE within that limit
  plus a margin, long before the start-up limit or the run's limit could end it.
- After a group ends in TLE, MLE, OLE or RJ, the later (larger) groups are "not run"; after a WA they run.
- The limits a run gets are the problem's, for its mode, with the command line's overrides on top.

Each file below is right on contiguous inputs and misbehaves only on views (a storage offset or a stride), so the
problem's first two groups pass and its third ("views") is the first to fail, with two groups after it.
"""

import time
from pathlib import Path

import pytest

from judge.options import Options, limits_for
from judge.problems import find_problem
from judge.session import Session
from judge.verdicts import Verdict

VECTOR_ADD = find_problem("93")

HEAD = """
import time
import torch
import triton
import triton.language as tl


@triton.jit
def _add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def add(x, y):
    if not (x.is_contiguous() and y.is_contiguous() and x.storage_offset() == 0 and y.storage_offset() == 0):
        return on_views(x, y)
    out = torch.empty_like(x)
    _add[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out

"""
ON_VIEWS = {
    "TLE": "def on_views(x, y):\n    time.sleep(10 ** 6)\n",
    # A request no host can grant, refused at once (nothing is touched): the worker's MemoryError.
    "MLE": "def on_views(x, y):\n    return bytearray(1 << 46)\n",
    "OLE": "def on_views(x, y):\n    while True:\n        print('still adding ' * 40)\n",
    "RJ": "def on_views(x, y):\n    return x + y  # PyTorch's add, not a kernel\n",
    # Its kernel adds x to itself: a wrong answer, computed by a kernel of the file's own.
    "WA": "def on_views(x, y):\n    out = torch.empty(x.shape, dtype=x.dtype)\n"
    "    _add[(triton.cdiv(x.numel(), 1024),)](x, x, out, x.numel(), BLOCK=1024)\n    return out\n",
}
CASE_SECONDS = 3.0
# What a case may take past its limit before the judge calls it: the kill, the worker's end, the group's books.
MARGIN = 12.0
# The start-up and run limits are far above both, so that a wait with either of them instead shows.
STARTUP_SECONDS = 90.0
RUN_SECONDS = 400.0


def _judge(tmp_path: Path, misbehaviour: str):
    path = tmp_path / f"add_{misbehaviour.lower()}_on_views.py"
    path.write_text(HEAD + ON_VIEWS[misbehaviour])
    limits = {
        "case_seconds_interpret": CASE_SECONDS,
        "startup_seconds": STARTUP_SECONDS,
        "run_seconds_interpret": RUN_SECONDS,
    }
    options = Options(sandbox="process", seed=4, workers=1, max_examples=1, limits=limits, speed=False)
    t0 = time.monotonic()
    report = Session(VECTOR_ADD, path, options).run()
    return report, time.monotonic() - t0


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    """Each file judged once in this module (two tests read the TLE file's report)."""
    cache = {}

    def get(misbehaviour):
        if misbehaviour not in cache:
            cache[misbehaviour] = _judge(tmp_path_factory.mktemp(misbehaviour.lower()), misbehaviour)
        return cache[misbehaviour]

    return get


def _by_name(report):
    return {g.name: g for g in report.groups}


@pytest.mark.corpus
@pytest.mark.parametrize("verdict", ["TLE", "MLE", "OLE", "RJ"])
def test_after_a_group_that_ends_the_run_the_later_groups_are_not_run(judged, verdict):
    report, _ = judged(verdict)
    names = [g.name for g in VECTOR_ADD.groups]
    assert names[2] == "views" and len(names) == 5
    groups = _by_name(report)
    assert report.verdict is Verdict(verdict), (report.verdict, report.message)
    assert groups["small-ragged"].passed and groups["block-edges"].passed
    views = groups["views"]
    assert not views.passed and views.verdict is Verdict(verdict) and views.cases_run >= 1 and not views.skipped
    for name in names[3:]:
        later = groups[name]
        assert later.cases_run == 0 and not later.passed, (name, later)
        assert later.skipped.startswith("not run") and verdict in later.skipped, later.skipped
    # The report says so too.
    as_json = {g["name"]: g for g in report.to_json()["groups"]}
    assert all(as_json[n]["skipped"].startswith("not run") for n in names[3:])
    # The groups that passed keep their points, except under RJ, which scores 0.
    assert report.score == (0 if verdict == "RJ" else 20 + 15)


@pytest.mark.corpus
def test_after_a_wrong_answer_the_later_groups_still_run(judged):
    report, _ = judged("WA")
    groups = _by_name(report)
    assert report.verdict is Verdict.WA
    assert groups["views"].verdict is Verdict.WA and not groups["views"].passed
    for name in ("extreme-values", "large"):
        assert groups[name].cases_run >= 1 and groups[name].passed and not groups[name].skipped, groups[name]
    assert report.score == 20 + 15 + 10 + 10


@pytest.mark.corpus
def test_a_case_past_the_per_case_limit_is_tle_within_that_limit_not_the_run_limit(judged):
    report, elapsed = judged("TLE")
    assert report.verdict is Verdict.TLE
    views = _by_name(report)["views"]
    assert views.verdict is Verdict.TLE and f"{CASE_SECONDS:g} s" in views.message, views.message
    # The group that hung took the case's limit and the margin, not the start-up's or the run's limit.
    hung = report.timing["group_seconds"]["views"]
    assert CASE_SECONDS <= hung < CASE_SECONDS + MARGIN, report.timing["group_seconds"]
    assert elapsed < STARTUP_SECONDS, elapsed


# ---------------------------------------------------------------------- the limits a run gets


class _Problem:
    """A problem's [limits], each value distinct, so that one read for another shows."""

    limits = {
        "case_seconds": 11,
        "case_seconds_interpret": 22,
        "run_seconds": 333,
        "run_seconds_interpret": 444,
        "memory_mb": 555,
        "output_kb": 66,
        "processes": 77,
        "startup_seconds": 88,
        "gpu_memory_mb": 999,
    }


def test_a_run_gets_its_modes_limits():
    gpu = limits_for(_Problem, Options(interpret=False, device="cuda"))
    interp = limits_for(_Problem, Options(interpret=True))
    assert (gpu.case_seconds, gpu.run_seconds) == (11, 333)
    assert (interp.case_seconds, interp.run_seconds) == (22, 444)
    for limits in (gpu, interp):
        assert (limits.memory_mb, limits.output_bytes, limits.processes) == (555, 66 * 1024, 77)
        assert (limits.startup_seconds, limits.gpu_memory_mb) == (88, 999)


def test_the_command_lines_limits_go_on_top_and_an_unset_one_changes_nothing():
    # --time-limit sets both case limits (judge.cli); an option left unset (None) changes nothing.
    opts = Options(
        interpret=True, limits={"case_seconds": 7, "case_seconds_interpret": 7, "memory_mb": None, "output_kb": 2}
    )
    limits = limits_for(_Problem, opts)
    assert limits.case_seconds == 7 and limits.memory_mb == 555 and limits.output_bytes == 2048
    assert limits.run_seconds == 444  # not overridden
    assert _Problem.limits["case_seconds"] == 11  # the problem's own table is not changed


def test_a_problem_without_a_mode_specific_limit_falls_back_to_its_general_one():
    class Bare:
        limits = {"case_seconds": 11, "run_seconds": 222}

    interp = limits_for(Bare, Options(interpret=True))
    assert (interp.case_seconds, interp.run_seconds) == (11, 222)


def test_a_problem_without_limits_gets_the_documented_defaults():
    from judge.options import GPU_MEMORY_MB

    class Empty:
        limits = {}

    d = limits_for(Empty, Options(interpret=False, device="cuda"))
    assert (d.case_seconds, d.run_seconds, d.memory_mb, d.output_bytes) == (60, 900, 8192, 1024 * 1024)
    assert (d.processes, d.startup_seconds, d.gpu_memory_mb) == (256, 60, GPU_MEMORY_MB)

    # A problem's gpu_memory_mb of 0 means "the default", not "none".
    class Zero:
        limits = {"gpu_memory_mb": 0}

    assert limits_for(Zero, Options()).gpu_memory_mb == GPU_MEMORY_MB


# ---------------------------------------------------------------------- how many workers a run gets


@pytest.fixture
def cores(monkeypatch):
    monkeypatch.delenv("JUDGE_WORKERS", raising=False)
    monkeypatch.delenv("JUDGE_REPLAY_WORKERS", raising=False)

    def set_cores(n):
        monkeypatch.setattr("os.cpu_count", lambda: n)

    return set_cores


@pytest.mark.parametrize("n,workers", [(1, 1), (2, 1), (3, 2), (5, 4), (64, 4)])
def test_in_the_interpreter_one_worker_per_core_but_one_at_most_four(cores, n, workers):
    from judge.options import auto_workers

    cores(n)
    assert auto_workers("cpu", True) == workers
    assert auto_workers("cuda", True, gpu_gib=80) == workers  # interpreted on a GPU host: the same
    assert auto_workers("cpu", False) == workers


@pytest.mark.parametrize(
    "n,gib,cap_mb,workers",
    [
        (16, 141, 8192, 12),  # one per core but four, at most 12
        (16, 80, 8192, 10),  # one per cap's worth of the device: 80 GiB / 8 GiB
        (8, 141, 8192, 4),  # one per core but four
        (4, 141, 8192, 1),  # never fewer than one
        (128, 141, 16384, 8),  # a problem's larger cap: fewer per device
        (128, 4, 8192, 1),
    ],
)
def test_on_a_gpu_workers_follow_the_cores_and_the_devices_memory(cores, n, gib, cap_mb, workers):
    from judge.options import auto_workers

    cores(n)
    assert auto_workers("cuda", False, gpu_gib=gib, gpu_memory_mb=cap_mb) == workers


def test_judge_workers_overrides_the_count(monkeypatch):
    from judge.options import auto_workers
    from judge.settings import settings

    monkeypatch.setenv("JUDGE_WORKERS", "3")
    assert auto_workers("cpu", True) == 3
    settings.cache_clear()  # (the judge reads its settings once)
    monkeypatch.setenv("JUDGE_WORKERS", "0")
    assert auto_workers("cpu", True) == 1


def test_without_a_visible_gpu_a_gpu_run_gets_one_worker(cores):
    from judge.options import auto_workers

    cores(64)
    assert auto_workers("cuda", False) == 1  # torch sees no CUDA device here


def test_a_run_never_starts_more_workers_than_its_largest_group_has_cases():
    from judge.options import planned_cases, session_workers

    p93 = find_problem("93")
    views = next(g for g in p93.groups if g.name == "views")
    assert planned_cases(views, Options(interpret=True)) == views.max_examples_interpret
    assert planned_cases(views, Options(interpret=False, device="cuda")) == views.max_examples
    assert planned_cases(views, Options(interpret=True, max_examples=9)) == 9
    assert planned_cases(views, Options(interpret=True, max_examples=9, quick=True)) == 2  # a quick test: two
    assert planned_cases(views, Options(interpret=True, max_examples=1, quick=True)) == 1
    assert session_workers(p93, Options(workers=3, case={"n": 1}, group="views")) == 1  # one case: one worker
    assert session_workers(p93, Options(workers=3)) == 3
    # "views": 6 drawn cases and 2 examples in the interpreter; with max_examples=0 its 2 examples alone.
    assert session_workers(p93, Options(workers=100, group="views")) == views.max_examples_interpret + 2
    assert session_workers(p93, Options(workers=100, group="views", max_examples=0)) == 2
    assert session_workers(p93, Options(workers=100, group="block-edges", max_examples=0)) == 1


def test_a_jobs_gpu_is_its_own_processes_index_where_cuda_visible_devices_names_it(monkeypatch):
    from judge.options import torch_device, torch_index

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    assert torch_index(5) == 1 and torch_index(3) == 0 and torch_device(5) == "cuda:1"
    assert torch_index(7) == 7  # not among the visible ones: the host's index
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert torch_index(None) == 0 and torch_index(2) == 2


# ---------------------------------------------------------------------- whether a run measures speed


GPU_SUBMIT = dict(device="cuda", interpret=False)


@pytest.mark.parametrize(
    "opts,verdict,why",
    [
        (Options(**GPU_SUBMIT), None, None),
        (Options(**GPU_SUBMIT), Verdict.AC, None),
        (Options(**GPU_SUBMIT), Verdict.WA, "no speed points without correctness: not every test group passed"),
        (Options(**GPU_SUBMIT, group="views"), None, "not measured: only part of the tests ran (--group/--case)"),
        (
            Options(**GPU_SUBMIT, group="views", case={"n": 1}),
            None,
            "not measured: only part of the tests ran (--group/--case)",
        ),
        (Options(**GPU_SUBMIT, speed=False), None, "not measured (--no-speed)"),
        (Options(**GPU_SUBMIT, quick=True), None, "not measured by a quick test: submit measures it"),
        (
            Options(device="cpu", interpret=True),
            None,
            "speed is not scored in interpreter mode: kernels run one program at a time on the CPU, so their times say "
            "nothing about a GPU (submit on a machine with a GPU to score it)",
        ),
        (
            Options(device="cuda", interpret=True),
            None,
            "speed is not scored in interpreter mode: kernels run one "
            "program at a time on the CPU, so their times say nothing about a GPU (submit on a machine with a GPU to "
            "score it)",
        ),
        # The first reason that holds is the one given: a quick test in the interpreter is a quick test.
        (
            Options(device="cpu", interpret=True, quick=True, speed=False),
            Verdict.WA,
            "not measured by a quick test: submit measures it",
        ),
        (Options(**GPU_SUBMIT, speed=False, group="views"), Verdict.WA, "not measured (--no-speed)"),
    ],
)
def test_why_a_run_measures_no_speed(opts, verdict, why):
    from judge.options import no_speed_run

    assert no_speed_run(VECTOR_ADD, opts, verdict) == why


def test_a_problem_without_speed_points_measures_no_speed():
    from judge.options import no_speed_run

    answers = type("Answers", (), {"speed_points": 0})
    assert no_speed_run(answers, Options(**GPU_SUBMIT)) == "this problem has no speed points"


@pytest.mark.parametrize(
    "device,interpret,lone,cores_n,workers",
    [
        ("cuda", False, True, 16, 3),
        ("cuda", False, True, 12, 3),
        ("cuda", False, True, 11, 2),
        ("cuda", False, False, 16, 1),
        ("cpu", True, True, 16, 1),
        ("cuda", True, True, 16, 1),
    ],
)
def test_replay_workers_a_lone_gpu_submit_gets_more(cores, device, interpret, lone, cores_n, workers):
    from judge.options import replay_workers

    cores(cores_n)
    assert replay_workers(device, interpret, lone) == workers


def test_judge_replay_workers_overrides_the_replay_count(monkeypatch):
    from judge.options import replay_workers
    from judge.settings import settings

    monkeypatch.setenv("JUDGE_REPLAY_WORKERS", "5")
    assert replay_workers("cpu", True, False) == 5
    settings.cache_clear()  # (the judge reads its settings once)
    monkeypatch.setenv("JUDGE_REPLAY_WORKERS", "0")
    assert replay_workers("cpu", True, False) == 1


def test_on_a_gpu_the_devices_memory_is_read_from_torch_when_not_given(cores, monkeypatch):
    import torch

    from judge.options import auto_workers

    def props(index):
        assert index == 0  # the job's own GPU is torch's cuda:0
        return type("Props", (), {"total_memory": 80 * 2**30})

    monkeypatch.setattr(torch.cuda, "get_device_properties", props)
    cores(16)
    assert auto_workers("cuda", False, gpu_memory_mb=8192) == 10  # 80 GiB / 8 GiB
    assert auto_workers("cuda", False, gpu_memory_mb=16384) == 5


@pytest.mark.parametrize(
    "n,gib,cap_mb,workers",
    [
        (128, 141, 8192, 12),  # never more than 12, however many cores and caps
        (128, 63.95, 8192, 7),  # whole caps only: 63.95 GiB holds 7 of 8 GiB
        (128, 64, 8192, 8),
        (128, 0.01, 1, 10),  # a cap of 1 MB: 10 of them in 10.24 MB
        (128, 0.01, 0, 10),  # a cap of 0 is counted as 1 MB, never a division by zero
    ],
)
def test_a_gpus_workers_are_whole_caps_and_at_most_twelve(cores, n, gib, cap_mb, workers):
    from judge.options import auto_workers

    cores(n)
    assert auto_workers("cuda", False, gpu_gib=gib, gpu_memory_mb=cap_mb) == workers


def test_without_workers_given_a_session_takes_the_automatic_count(cores):
    from judge.options import session_workers

    p93 = find_problem("93")
    cores(16)
    assert session_workers(p93, Options(device="cpu", interpret=True)) == 4
    # On a GPU: whole caps of the problem's gpu_memory_mb in the device's memory (12 GiB / 2 GiB).
    gpu = Options(device="cuda", interpret=False, limits={"gpu_memory_mb": 2048})
    assert session_workers(p93, gpu, gpu_gib=12) == 6
    gpu = Options(device="cuda", interpret=False, limits={"gpu_memory_mb": 4096})
    assert session_workers(p93, gpu, gpu_gib=12) == 3
    # A group that is not there has no cases: one worker.
    assert session_workers(p93, Options(workers=3, group="nope")) == 1
