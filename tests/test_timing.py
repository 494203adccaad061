"""The timing protocol's CPU-testable parts: statistics, score, floor, clocks, lock, input generation,
and the bench messages through real workers in interpreter mode (perf_counter times there: a test of
the protocol, never a speed claim). No test asserts a wall time."""

import contextlib
import math
import os
import random
import secrets
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
import torch

from judge.options import Options
from judge.problems import find_problem
from judge.replies import parsers
from judge.shared import bench_inputs
from judge.timing import checks, speedrun, stats, verify
from judge.timing.contenders import request
from judge.timing.findings import BenchFailed
from judge.timing.lock import gpu_lock
from judge.timing.result import NOT_A_CLAIM
from judge.timing.score import SpeedScore
from judge.timing.speedrun import BenchConfig, SpeedRun, config_for

# ---------------------------------------------------------------------- statistics


def test_t_quantiles_match_the_table_and_approach_the_normal():
    assert stats.t975(1) == pytest.approx(12.706)
    assert stats.t975(10) == pytest.approx(2.228)
    assert stats.t975(120) == pytest.approx(1.980, abs=2e-3)
    assert stats.t975(10_000) == pytest.approx(1.960, abs=1e-3)


def test_mean_interval_known_answer():
    iv = stats.mean_interval([0.1, 0.2, 0.3])  # mean 0.2, sd 0.1, n 3
    half = 4.303 * 0.1 / math.sqrt(3)
    assert iv.value == pytest.approx(math.exp(0.2))
    assert iv.half_width == pytest.approx(half)
    assert iv.low == pytest.approx(math.exp(0.2 - half)) and iv.high == pytest.approx(math.exp(0.2 + half))
    assert math.isinf(stats.mean_interval([0.3]).half_width)  # one round says nothing about spread


def test_median_and_geomean():
    assert stats.median([3, 1, 2]) == 2 and stats.median([4, 1, 3, 2]) == 2.5
    assert stats.geomean([2, 8]) == pytest.approx(4)
    with pytest.raises(ValueError):
        stats.geomean([1, 0])


def test_speedups_per_shape_and_clamped_geomean():
    # Shape 0: the submission twice as fast in every round; shape 1: 100x (clamped to 8 in the geomean).
    rounds = [{0: ([2.0, 2.0, 2.2], [1.0, 1.1, 1.0]), 1: ([100.0], [1.0])} for _ in range(4)]
    shapes, gm = stats.speedups(rounds, clamp=8.0)
    assert shapes[0].value == pytest.approx(2.0)  # medians 2.0 / 1.0
    assert shapes[1].value == pytest.approx(100.0)
    assert gm.value == pytest.approx(math.sqrt(2.0 * 8.0))
    assert gm.half_width == pytest.approx(0.0, abs=1e-12)  # identical rounds


def test_clamp_is_symmetric():
    assert stats.clamp_log(math.log(1 / 100), 8) == pytest.approx(-math.log(8))
    assert stats.clamp_log(math.log(3), 8) == pytest.approx(math.log(3))


def test_stop_rule_decisions():
    rule = stats.StopRule(ci_target=0.01, min_rounds=3, max_rounds=10, budget_seconds=5.0)
    assert rule.decide(2, 0.0, 0.1, 0.1) is None  # too few rounds, however narrow
    assert rule.decide(3, 0.005, 0.1, 0.1) == "ci"
    assert rule.decide(3, 0.05, 0.1, 0.1) is None
    assert rule.decide(10, 0.05, 0.1, 0.1) == "rounds"
    assert rule.decide(4, 0.05, 4.5, 1.0) == "budget"  # the next round would end past the budget


def test_stopping_rule_on_lognormal_rounds_stops_by_ci_and_covers_the_truth():
    """True speedup 1.25, each round's log-ratio off by N(0, 0.02): the rule must stop on the interval
    (about (2 * 0.02 / 0.01)^2 = 16 rounds) and the interval must cover 1.25 for most seeds."""
    covered, stops = 0, []
    for seed in range(40):
        rng = random.Random(seed)
        rule = stats.StopRule(ci_target=0.01, min_rounds=3, max_rounds=200, budget_seconds=1e9)
        rounds, why = [], None
        while why is None:
            noise = math.exp(rng.gauss(0, 0.02))
            rounds.append({0: ([1.25 * noise], [1.0])})
            _, gm = stats.speedups(rounds, clamp=8)
            why = rule.decide(len(rounds), gm.half_width, 0, 0)
        assert why == "ci" and gm.half_width <= 0.01
        stops.append(len(rounds))
        covered += gm.low <= 1.25 <= gm.high
    assert 8 <= stats.median(stops) <= 30
    assert covered >= 34  # a 95% interval, stopped when narrow enough, still covers ~90%+


# ---------------------------------------------------------------------- score


def test_score_mapping():
    s = SpeedScore(max_points=30, zero_at=0.5, full_at=1.0, clamp=8)
    assert s.points(0.4) == 0 and s.points(0.5) == 0
    assert s.points(1.0) == 30 and s.points(3.0) == 30  # capped
    assert s.points(math.sqrt(0.5)) == pytest.approx(15)  # half way in log2
    assert s.points(0.8) == pytest.approx(30 * math.log2(1.6), abs=0.01)
    assert s.points(2.0, eligible=False) == 0  # no speed credit without correctness
    assert s.points(float("nan")) == 0


def test_score_constants_come_from_problem_toml_and_are_validated():
    p = find_problem("94")
    s = SpeedScore.from_spec(p.spec["score"], p.speed_points)
    assert (s.max_points, s.zero_at, s.full_at, s.clamp) == (30, 0.5, 1.0, 8.0)
    with pytest.raises(ValueError):
        SpeedScore.from_spec({"speed_zero_at": 1.0, "speed_full_at": 0.5}, 30)


def test_report_score_adds_speed_points_only_when_every_group_passed():
    from judge.verdicts import GroupResult, Report, Verdict

    def report(passed):
        groups = [GroupResult("a", "", 70, passed, 1, Verdict.AC if passed else Verdict.WA)]
        return Report(
            problem={},
            submission={},
            mode={},
            seed=0,
            verdict=groups[0].verdict,
            message="",
            groups=groups,
            notes=[],
            max_score=100,
            speed={"scored": True, "points": 21.5},
            elapsed_seconds=0,
        )

    assert report(True).score == 91.5
    assert report(False).score == 0


# ---------------------------------------------------------------------- floor and clocks


def test_floor_picks_the_binding_resource():
    mem = checks.floor_time((4e9, 0), bandwidth=4e12, flops_rate=6e14)
    assert mem.bound == "memory" and mem.seconds == pytest.approx(1e-3)
    comp = checks.floor_time((1e8, 1.2e12), bandwidth=4e12, flops_rate=6e14)
    assert comp.bound == "compute" and comp.seconds == pytest.approx(2e-3)
    assert checks.below_floor(0.7e-3, mem, margin=0.8)
    assert not checks.below_floor(0.9e-3, mem, margin=0.8)  # 11% past the measured ceiling is allowed


def honest(**kw):
    values = dict(
        event_total=0.010,
        host_total=0.012,
        worker_wall=0.050,
        judge_wall=0.052,
        event_median=1.0e-3,
        host_median=1.1e-3,
    )
    values.update(kw)
    return checks.clock_problems(**values)


def test_honest_clocks_pass():
    assert honest() == []
    assert honest(event_median=None, host_median=None) == []


@pytest.mark.parametrize(
    "forged, words",
    [
        ({"event_total": 0.2}, "more than"),  # times longer than the whole request
        ({"host_total": 0.2}, "host times"),
        ({"worker_wall": 0.5}, "the judge saw"),
        ({"worker_wall": 0.001}, "slowed clock"),  # the worker's clock ran slow
        ({"event_median": 1e-5}, "forged timer"),  # elapsed_time reporting 1/100 of the truth
    ],
)
def test_forged_clocks_are_found(forged, words):
    found = honest(**forged)
    assert found and words in found[0]


# ---------------------------------------------------------------------- lock

HOLDER = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, sys.argv[1])
    from judge.timing.lock import gpu_lock
    with gpu_lock(3):
        open(sys.argv[2], "w").write("held")
        while not os.path.exists(sys.argv[3]):
            time.sleep(0.05)
""")


HOLDER_OF = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, sys.argv[1])
    from judge.timing.lock import gpu_lock, gpu_shared
    with (gpu_lock(3) if sys.argv[4] == "exclusive" else gpu_shared(3)):
        open(sys.argv[2], "w").write("held")
        while not os.path.exists(sys.argv[3]):
            time.sleep(0.05)
""")


def _holder(tmp_path, repo_root, mode, name):
    held, release = tmp_path / f"{name}.held", tmp_path / f"{name}.release"
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER_OF, str(repo_root), str(held), str(release), mode],
        env={**__import__("os").environ, "JUDGE_LOCK_DIR": str(tmp_path)},
    )
    return child, held, release


def _wait_for(path, seconds=30.0):
    deadline = time.monotonic() + seconds
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return path.exists()


@contextlib.contextmanager
def _holding(tmp_path, repo_root, mode, name):
    """Another judge (a child process) holding GPU 3 ``mode`` ("exclusive" or "shared") once it says so:
    (held, release) files; released and waited for at the end whatever happened."""
    child, held, release = _holder(tmp_path, repo_root, mode, name)
    try:
        yield held, release
    finally:
        release.write_text("")
        child.wait(timeout=60)


def _case_in_a_thread(record):
    """A new case of ours taking GPU 3 shared in a thread; ``record()``'s value is appended once it got in."""
    from judge.timing.lock import gpu_shared

    started = []

    def new_case():
        with gpu_shared(3):
            started.append(record())

    thread = threading.Thread(target=new_case, daemon=True)
    thread.start()
    return thread, started


def _speed_run_then_case(let_go, timing_held, timing_release, thread, started) -> None:
    """``let_go`` ends what the waiting speed run waits for: it must get the GPU, and the case in ``thread`` must
    not start while it holds it; then the speed run ends, and the thread is waited for."""
    let_go.write_text("")
    assert _wait_for(timing_held), "the waiting speed run never got the GPU"
    time.sleep(0.3)
    assert not started, "a case started before the waiting speed run was over"
    timing_release.write_text("")
    thread.join(timeout=30)


def test_a_speed_run_waits_for_the_cases_in_flight_and_no_new_case_starts_meanwhile(tmp_path, monkeypatch, repo_root):
    # judge grade and judge serve judge several submissions on one GPU: their correctness cases share it, a
    # speed run has it to itself (on the H200, timed calls beside other jobs' cases measured 1.5 ms of host
    # time around 0.19 ms of GPU work: tests/gpu/logs/2026-12-01c/call2/bench.txt).
    from judge.timing.lock import gpu_shared

    monkeypatch.setenv("JUDGE_LOCK_DIR", str(tmp_path))
    with _holding(tmp_path, repo_root, "shared", "case") as (case_held, case_release):
        assert _wait_for(case_held), "the case never took the GPU"
        with gpu_shared(3):  # cases run side by side
            pass
        with pytest.raises(TimeoutError):
            with gpu_lock(3, timeout=0.3):  # a case is in flight
                pass
        with _holding(tmp_path, repo_root, "exclusive", "timing") as (timing_held, timing_release):
            time.sleep(1.0)
            assert not timing_held.exists(), "the speed run started beside a case in flight"
            # A speed run is waiting: a new case waits too, in a thread of ours, until the speed run is over.
            thread, started = _case_in_a_thread(lambda: True)
            time.sleep(0.5)
            assert not started, "a new case started while a speed run was waiting"
            _speed_run_then_case(case_release, timing_held, timing_release, thread, started)
            assert started, "the waiting case never started after the speed run"


def test_a_waiting_speed_run_goes_next_and_no_case_slips_in_between_two(tmp_path, monkeypatch, repo_root):
    # Without the queue a case waiting for the first speed run to end would start the instant it ended (it
    # polls four times as often), and the second speed run would then wait for it to drain.
    monkeypatch.setenv("JUDGE_LOCK_DIR", str(tmp_path))
    with _holding(tmp_path, repo_root, "exclusive", "first") as (first_held, first_release):
        assert _wait_for(first_held), "the first speed run never took the GPU"
        with _holding(tmp_path, repo_root, "exclusive", "second") as (second_held, second_release):
            time.sleep(1.0)  # the second one waits (in the queue)
            thread, started = _case_in_a_thread(second_held.exists)
            time.sleep(0.5)
            _speed_run_then_case(first_release, second_held, second_release, thread, started)
            assert started == [True], "the case started before the waiting speed run, or never"


def test_the_speed_runs_own_process_is_not_held_up_by_its_own_lock(tmp_path, monkeypatch):
    from judge.timing.lock import gpu_shared

    monkeypatch.setenv("JUDGE_LOCK_DIR", str(tmp_path))
    with gpu_lock(5, timeout=5):
        with gpu_shared(5):  # e.g. the speed run asks its replay or its worker for a fresh case
            pass
    with gpu_shared(5):
        with gpu_shared(5):
            pass


def test_lock_second_judge_waits_until_the_first_releases(tmp_path, monkeypatch, repo_root):
    monkeypatch.setenv("JUDGE_LOCK_DIR", str(tmp_path))
    held, release = tmp_path / "held", tmp_path / "release"
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(repo_root), str(held), str(release)],
        env={**__import__("os").environ, "JUDGE_LOCK_DIR": str(tmp_path)},
    )
    try:
        for _ in range(600):
            if held.exists():
                break
            time.sleep(0.05)
        assert held.exists(), "the first judge never took the lock"
        told = []
        with pytest.raises(TimeoutError):
            with gpu_lock(3, timeout=0.3, on_wait=told.append):
                pass
        assert len(told) == 1 and "GPU 3" in told[0] and f"pid {child.pid}" in told[0]
        release.write_text("")
        with gpu_lock(3, timeout=60) as path:
            assert child.wait(timeout=60) == 0  # we got it only after the holder finished
            assert path.read_text().strip() == str(__import__("os").getpid())
        with gpu_lock(4, timeout=0):  # another GPU's lock is independent
            pass
    finally:
        release.write_text("")
        child.wait(timeout=60)


# ---------------------------------------------------------------------- inputs


def test_call_seeds_are_distinct_and_reproducible():
    seeds = {bench_inputs.call_seed(12345, i) for i in range(1000)}
    assert len(seeds) == 1000
    assert bench_inputs.call_seed(12345, 7) == bench_inputs.call_seed(12345, 7) != bench_inputs.call_seed(12346, 7)


def test_generated_inputs_are_reproducible_and_fresh():
    p = find_problem("96")
    specs = p.golden.bench_args({"m": 8, "n": 300, "dtype": "float16", "eps": 1e-6})
    a = bench_inputs.make(specs, 99, "cpu")
    b = bench_inputs.make(specs, 99, "cpu")
    c = bench_inputs.make(specs, 100, "cpu")
    assert a[0].dtype == torch.float16 and list(a[0].shape) == [8, 300] and a[2] == 1e-6
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], c[0])
    bench_inputs.fill(specs, c, 99)  # refilled in place: the same values as a fresh make
    assert torch.equal(a[0], c[0])
    assert bench_inputs.nbytes(specs) == (8 * 300 + 300) * 2


def test_generated_attention_inputs_are_the_forward_of_q_k_v():
    p = find_problem("98")
    params = {"b": 1, "h": 2, "n": 33, "d": 16, "causal": True, "dtype": "float32"}
    q, k, v, o, lse, do, causal, scale = bench_inputs.make(p.golden.bench_args(params), 5, "cpu")
    assert causal is True and scale is None
    s = (q.double() @ k.double().transpose(-1, -2)) / 4.0
    s = s.masked_fill(torch.ones(33, 33, dtype=torch.bool).triu(1), -math.inf)
    assert torch.allclose(lse.double(), torch.logsumexp(s, -1), atol=1e-5)
    assert torch.allclose(o.double(), torch.softmax(s, -1) @ v.double(), atol=1e-5)
    assert not torch.equal(do, q)


def test_every_problem_has_bench_shapes_work_and_a_baseline():
    from judge.problems import all_problems

    for p in [p for p in all_problems() if p.speed_points > 0]:  # answers problems have no speed part
        bench = p.spec["bench"]
        assert bench["shapes"] and bench["interpret_shapes"], p.id
        for params in bench["shapes"] + bench["interpret_shapes"]:
            nbytes, flops = p.golden.work(dict(params))
            assert nbytes > 0 and flops >= 0
            assert len(p.golden.bench_args(dict(params))) == p.arity
        assert callable(p.golden.pytorch)


# ---------------------------------------------------------------------- through real workers

CHEAT = textwrap.dedent("""
    import torch
    import triton
    import triton.language as tl

    CALLS = [0]

    @triton.jit
    def _add(x, y, out, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)

    def add(x, y):
        CALLS[0] += 1
        out = torch.zeros_like(x)
        n = x.numel() if CALLS[0] == 1 else x.numel() // 2  # right when watched, half done when timed
        _add[(triton.cdiv(max(n, 1), 1024),)](x, y, out, n, BLOCK=1024)
        return out
""")


def _speed_run(problem_id, path, tmp_path, shapes=1, replay_workers=1, replay=True, **config) -> SpeedRun:
    from judge.sandbox import Limits
    from judge.sandbox.process import ProcessBackend

    p = find_problem(problem_id)
    cfg = BenchConfig(
        shapes=[dict(x) for x in p.spec["bench"]["interpret_shapes"][:shapes]],
        stop=stats.StopRule(ci_target=0.01, min_rounds=2, max_rounds=2, budget_seconds=60),
        **config,
    )
    limits = Limits(
        case_seconds=120, run_seconds=600, memory_mb=4096, output_bytes=1 << 20, processes=256, startup_seconds=120
    )
    return SpeedRun(
        p,
        path,
        device="cpu",
        interpret=True,
        gpu=None,
        backend=ProcessBackend(),
        limits=limits,
        scratch=tmp_path,
        config=cfg,
        replay=replay,
        replay_workers=replay_workers,
    )


def _check_ahead(monkeypatch, on: bool = True) -> None:
    """The warm-up's checks ahead of the lock in the interpreter too, as on a GPU (on); ``on=False``: as
    judge.timing.verify.checks_ahead has it (in the interpreter, none)."""
    monkeypatch.setattr(verify, "checks_ahead", (lambda cuda: True) if on else CHECKS_AHEAD)


CHECKS_AHEAD = verify.checks_ahead


def _bench(problem_id, path, tmp_path, shapes=1, prewarm=False, **config):
    """A speed run of ``path`` in interpreter mode; ``prewarm``: its warm-up run ahead first, as a session
    starts it during its later test groups."""
    run = _speed_run(problem_id, path, tmp_path, shapes, **config)
    if prewarm:
        run.prewarm()
        run._prewarm.join()  # as beside test groups that outlast it (run() waiting for it skips what is left)
    return run.run()


def test_bench_round_trip_in_interpreter_mode(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGE_CACHE_DIR", str(tmp_path / "cache"))
    p = find_problem("93")
    speed = _bench("93", p.reference_path, tmp_path)
    assert speed["timing_mode"].startswith("cpu") and NOT_A_CLAIM in speed["notes"]
    assert speed["rounds"] == 2 and speed["stopped"] == "rounds"
    (row,) = speed["shapes"]
    assert row["mode"] == "cpu" and row["time_s"] > 0 and row["reference_time_s"] > 0
    assert row["pytorch_time_s"] > 0 and row["checked_calls"]  # a timed call's outputs were checked
    assert 0 < speed["geomean_speedup"] and speed["ci"][0] <= speed["geomean_speedup"] <= speed["ci"][1]
    assert "floor_s" not in row  # no physical floor without a GPU's ceilings
    assert row["calls_per_sample"] == 1 and row["calls_per_round"] == row["samples_per_round"]
    # The profiler ran in every worker (on the CPU only: no second clock to compare, and no note about it).
    assert row["profiler_time_s"] is None and row["reference_profiler_time_s"] is None
    for name in ("submission", "reference", "pytorch"):
        clock = row["clock"][name]
        assert clock["profiler"]["status"] == "cpu" and clock["retries"] == 0 and clock["samples"] > 0
    assert not [n for n in speed["notes"] if "profiler" in n]
    assert "profile_seconds" in speed["phases"]
    # The checked call was replayed, and the judge's side of the replay's time is split into its parts.
    phases = speed["phases"]
    parts = [phases[f"replay_{k}_seconds"] for k in ("inputs", "golden", "wait", "judge")]
    assert phases["replays"] == 1 and all(x >= 0 for x in parts) and parts[2] > 0
    # Each figure is rounded to the millisecond: four parts may add up to 2 ms over their rounded whole.
    assert sum(parts) <= phases["replay_seconds"] + 2.5e-3


def test_a_submission_wrong_only_when_timed_is_caught_by_the_output_check(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGE_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "cheat.py"
    path.write_text(CHEAT)
    with pytest.raises(BenchFailed) as exc:
        _bench("93", path, tmp_path, torch_baseline=False)
    assert exc.value.verdict == "WA" and "timed call" in exc.value.message


# Honest when judged (the first call at a shape is the speed run's watched warm-up), and when timed the sums
# done in NumPy on the inputs' bytes, staged with torch.frombuffer (no dispatched operator) and copied into
# the output by a kernel that computes nothing: right outputs, an own kernel launched, no PyTorch operator.
TIMED_BYTES_CHEAT = textwrap.dedent("""
    import numpy as np
    import torch
    import triton
    import triton.language as tl

    CALLS = [0]

    @triton.jit
    def _add(x, y, out, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)

    @triton.jit
    def _copy(src, dst, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(dst + offs, tl.load(src + offs, mask=mask), mask=mask)

    def add(x, y):
        CALLS[0] += 1
        n = x.numel()
        out = torch.empty_like(x)
        if CALLS[0] == 1:
            _add[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
            return out
        dt = np.float32 if x.dtype == torch.float32 else np.float16
        sums = np.frombuffer(memoryview(x.numpy()).tobytes(), dtype=dt) + np.frombuffer(
            memoryview(y.numpy()).tobytes(), dtype=dt)
        staged = torch.frombuffer(bytearray(sums.tobytes()), dtype=x.dtype)
        _copy[(triton.cdiv(n, 1024),)](staged, out, n, BLOCK=1024)
        return out
""")


def test_a_timed_call_computed_outside_its_kernels_is_caught_by_the_replay(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGE_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "cheat.py"
    path.write_text(TIMED_BYTES_CHEAT)
    with pytest.raises(BenchFailed) as exc:
        _bench("93", path, tmp_path, torch_baseline=False)
    assert exc.value.verdict == "RJ" and "the replay check" in exc.value.message, exc.value.message
    assert "data from outside your kernels reached out" in exc.value.message
    # Nothing else in the speed run sees it: the replay of the checked timed call is the check.
    speed = _bench("93", path, tmp_path / "off", torch_baseline=False, replay=False)
    assert speed["shapes"][0]["checked_calls"] and "replays" not in speed["phases"]


# Two shapes, two cheats: at the first (n=3000) the timed calls are computed outside the kernels (the replay
# finds it), at the second (n=777) they are wrong (the output check finds it, before that replay is done).
TWO_SHAPE_CHEAT = TIMED_BYTES_CHEAT.replace(
    "    if CALLS[0] == 1:\n",
    """    if n in SEEN and n == 777:
        _add[(triton.cdiv(n, 1024),)](x, x, out, n, BLOCK=1024)
        return out
    if n not in SEEN:
        SEEN.add(n)
""",
).replace("CALLS = [0]", "CALLS = [0]\nSEEN = set()")
assert TWO_SHAPE_CHEAT != TIMED_BYTES_CHEAT


@pytest.mark.parametrize("replay_workers", [1, 2])
def test_a_replays_finding_comes_before_a_later_shapes_wrong_output(tmp_path, monkeypatch, replay_workers):
    # The replays run beside the later shapes' checks (judge.timing.verify.Verifier.checks); what they find is
    # taken in the calls' order, as if each had been waited for in turn: with two replay workers too, where the
    # second shape's replay may end first.
    monkeypatch.setenv("JUDGE_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "cheat.py"
    path.write_text(TWO_SHAPE_CHEAT)
    with pytest.raises(BenchFailed) as exc:
        _bench("93", path, tmp_path, shapes=2, torch_baseline=False, replay_workers=replay_workers)
    assert exc.value.verdict == "RJ" and "n=3000" in exc.value.message, exc.value.message
    # Without the replay, the second shape's wrong outputs are what is found.
    with pytest.raises(BenchFailed) as exc:
        _bench("93", path, tmp_path / "off", shapes=2, torch_baseline=False, replay=False)
    assert exc.value.verdict == "WA" and "n=777" in exc.value.message, exc.value.message


def test_a_lone_submits_speed_run_replays_its_timed_calls_on_two_workers_at_once(tmp_path, monkeypatch):
    # With one replay worker the timed calls' replays ran one after another while the report waited (softmax's
    # reference on the H200: 2.0 s of its 22.4 s; flash-backward's: 3.9-4.0 s). A lone submit on a GPU gives
    # the speed run two (judge.options.replay_workers), each replay taking a free one.
    import threading

    from judge.replay import Replayer

    monkeypatch.setenv("JUDGE_CACHE_DIR", str(tmp_path / "cache"))
    used, inside, most = set(), [0], [0]
    count = threading.Lock()
    real = Replayer.check_bench

    def check_bench(self, *args, **kwargs):
        with count:
            used.add(id(self))
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        try:
            time.sleep(0.5)  # long enough for the next shape's replay to be queued meanwhile
            return real(self, *args, **kwargs)
        finally:
            with count:
                inside[0] -= 1

    monkeypatch.setattr(Replayer, "check_bench", check_bench)
    speed = _bench("93", find_problem("93").reference_path, tmp_path, shapes=2, torch_baseline=False, replay_workers=2)
    assert all(row["checked_calls"] for row in speed["shapes"]) and speed["phases"]["replays"] == 2
    assert len(used) == 2 and most[0] == 2, (used, most)


# Honest, but its timed calls allocate 300 blocks of memory: more than a record describes
# (judge.shared.tracing.MAX_STORAGES), so no timed call could be replayed. Opting out is not allowed.
FLOODED_WHEN_TIMED = textwrap.dedent("""
    import torch
    import triton
    import triton.language as tl

    CALLS = [0]

    @triton.jit
    def _add(x, y, out, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)

    def add(x, y):
        CALLS[0] += 1
        if CALLS[0] > 1:
            spare = [torch.empty(1, device=x.device) for _ in range(300)]
        n = x.numel()
        out = torch.empty_like(x)
        _add[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        return out
""")


def test_a_timed_call_that_cannot_be_replayed_is_rejected(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGE_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "flooded.py"
    path.write_text(FLOODED_WHEN_TIMED)
    with pytest.raises(BenchFailed) as exc:
        _bench("93", path, tmp_path, torch_baseline=False)
    assert exc.value.verdict == "RJ" and "could not be replayed alone" in exc.value.message, exc.value.message
    assert "blocks of memory" in exc.value.message


# Wrong only when x[0] > 3 (about one call in 740): the checked timed call passes, the replay's fresh inputs
# (their seed chosen below) catch it, and so do they in the submission's own worker: WA, not RJ.
RARELY_WRONG = textwrap.dedent("""
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def _add(x, y, out, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        s = tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask)
        first = tl.load(x)
        s = tl.where(offs == 0, tl.where(first > 3.0, s + 1.0, s), s)
        tl.store(out + offs, s, mask=mask)

    def add(x, y):
        n = x.numel()
        out = torch.empty_like(x)
        _add[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        return out
""")


def test_a_timed_call_wrong_on_the_replays_inputs_is_a_wrong_answer(tmp_path, monkeypatch):
    import judge.replay
    from judge.timing import measure, plan

    monkeypatch.setenv("JUDGE_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "rarely_wrong.py"
    path.write_text(RARELY_WRONG)
    p = find_problem("93")
    specs = p.golden.bench_args(dict(p.spec["bench"]["interpret_shapes"][0]))

    def first(seed, call=0):
        return bench_inputs.make(specs, bench_inputs.call_seed(seed, call), "cpu")[0][0]

    base = next(b for b in range(1, 100_000) if first(b) > 3.0)
    # The timed calls' own seeds: every call of every request right, so that only the replay's fresh inputs can
    # find the wrong value (with random seeds a checked call was itself wrong once in CI: WA, but not this path).
    ok = next(b for b in range(1, 100_000) if all(first(b, c) <= 3.0 for c in range(256)))

    class Fixed:  # the secrets module as one module sees it, with its seeds fixed
        def __init__(self, seed):
            self.seed = seed

        def randbits(self, bits):
            return self.seed

        def __getattr__(self, name):
            return getattr(secrets, name)

    monkeypatch.setattr(judge.replay, "secrets", Fixed(base))  # the replay's fresh seed
    for module in (plan, measure):  # the warm-up's seeds and the timed calls'
        monkeypatch.setattr(module, "secrets", Fixed(ok))
    with pytest.raises(BenchFailed) as exc:
        _bench("93", path, tmp_path, torch_baseline=False)
    assert exc.value.verdict == "WA" and "on new inputs" in exc.value.message, exc.value.message
    assert exc.value.details["found_by"] == "the replay check's fresh inputs"


def test_a_warm_up_call_is_checked_and_replayed_ahead_when_asked(tmp_path, monkeypatch):
    # On a GPU (and here when asked, _check_ahead) the prewarm checks one of its warm-up calls per shape and
    # replays it, beside the tests: the replay worker compiles the bench shapes' kernels then, not after the
    # rounds. The timed call is checked and replayed after the rounds as before.
    monkeypatch.setenv("JUDGE_CACHE_DIR", str(tmp_path / "cache"))
    _check_ahead(monkeypatch)
    p = find_problem("93")
    phases = _bench("93", p.reference_path, tmp_path, prewarm=True, torch_baseline=False)["phases"]
    assert phases["ahead_replays"] == 1 and phases["replays"] == 2, phases  # the replays' figures are totals
    assert 0 < phases["ahead_replay_seconds"] <= phases["replay_seconds"] and phases["ahead_check_seconds"] > 0
    _check_ahead(monkeypatch, False)  # interpreter mode's default: nothing ahead to compile
    phases = _bench("93", p.reference_path, tmp_path / "off", prewarm=True, torch_baseline=False)["phases"]
    assert phases["replays"] == 1 and "ahead_replays" not in phases, phases


def test_the_checks_ahead_not_begun_when_the_run_needs_the_warm_up_are_skipped(tmp_path, monkeypatch):
    # Once the tests are over and the run waits for the warm-up ahead, its checks and replays ahead are the
    # run's wait (vector add's reference on the H200: 5.3 s): what is not begun is skipped; the timed calls
    # are checked and replayed after the rounds as always.
    monkeypatch.setenv("JUDGE_CACHE_DIR", str(tmp_path / "cache"))
    _check_ahead(monkeypatch)
    p = find_problem("93")
    run = _speed_run("93", p.reference_path, tmp_path, shapes=2, torch_baseline=False)
    from judge.timing.plan import Planner

    real = Planner.warm_up
    gate = threading.Event()

    def warm_up(self, s, params, **kwargs):
        gate.wait(60)  # the first shape's warm-up ahead is still on when run() begins
        return real(self, s, params, **kwargs)

    monkeypatch.setattr(Planner, "warm_up", warm_up)
    run.prewarm()
    threading.Timer(0.5, gate.set).start()
    speed = run.run()
    phases = speed["phases"]
    assert phases["ahead_checks_skipped"] == 2 and phases["ahead_check_seconds"] == 0, phases
    assert phases["replays"] == 2 and all(row["checked_calls"] for row in speed["shapes"]), phases


# Half done in the warm-up's two timed samples alone (its second and third calls at a shape), right otherwise.
WRONG_AT_WARM_UP = CHEAT.replace(
    "n = x.numel() if CALLS[0] == 1 else x.numel() // 2  # right when watched, half done when timed",
    "n = x.numel() // 2 if CALLS[0] in (2, 3) else x.numel()",
)
assert WRONG_AT_WARM_UP != CHEAT


# Computed outside its kernels in the warm-up's two timed samples alone (its second and third calls at a shape).
WARM_UP_BYTES_CHEAT = TIMED_BYTES_CHEAT.replace("if CALLS[0] == 1:", "if CALLS[0] not in (2, 3):")
assert WARM_UP_BYTES_CHEAT != TIMED_BYTES_CHEAT


@pytest.mark.parametrize(
    "source, verdict, says",
    [
        (WRONG_AT_WARM_UP, "WA", ()),  # the output check
        (WARM_UP_BYTES_CHEAT, "RJ", ("the replay check", "data from outside your kernels")),  # the replay
    ],
    ids=["wrong", "outside-kernels"],
)
def test_a_warm_up_call_checked_ahead_is_judged_by_the_timed_calls_rules(tmp_path, monkeypatch, source, verdict, says):
    monkeypatch.setenv("JUDGE_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "warm_cheat.py"
    path.write_text(source)
    _check_ahead(monkeypatch)
    with pytest.raises(BenchFailed) as exc:
        _bench("93", path, tmp_path, prewarm=True, torch_baseline=False)
    assert exc.value.verdict == verdict and exc.value.message.startswith("warm-up call "), exc.value.message
    assert all(words in exc.value.message for words in says), exc.value.message
    # Not checked ahead (the interpreter's default), its warm-up calls are never looked at: its timed calls are
    # right.
    _check_ahead(monkeypatch, False)
    speed = _bench("93", path, tmp_path / "off", prewarm=True, torch_baseline=False)
    assert speed["measured"] and speed["shapes"][0]["checked_calls"]


def test_a_discarded_runs_replay_waiting_for_the_gpu_starts_no_worker(tmp_path, monkeypatch):
    # The warm-up's replay ahead waits for the GPU (another judge times on it) when a later group fails: the
    # run is discarded, the wait ends, and no replay worker is started again for a run that is over.
    import contextlib

    import judge.replay
    from judge.timing import lock

    monkeypatch.setenv("JUDGE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("JUDGE_LOCK_DIR", str(tmp_path))
    _check_ahead(monkeypatch)
    waiting = threading.Event()
    spawned = []
    spawn = judge.replay.Replayer._spawn

    def spied_spawn(self):
        spawned.append(threading.current_thread().name)
        spawn(self)

    monkeypatch.setattr(judge.replay.Replayer, "_spawn", spied_spawn)

    @contextlib.contextmanager
    def shared(cancel=None):
        # The replay's thread waits behind another judge's speed run: the real lock, its files held here.
        if threading.current_thread().name.startswith("judge-bench-replay"):
            waiting.set()
            with lock.gpu_shared(0, cancel=cancel, poll=0.01):
                yield
            return
        yield

    run = _speed_run("93", find_problem("93").reference_path, tmp_path / "run", torch_baseline=False)
    with lock.gpu_lock(0):
        lock._held[0] -= 1  # held as another judge's process holds it (this process's cases would not wait)
        try:
            run.prewarm(shared=shared)
            assert waiting.wait(120), "the warm-up's replay never asked for the GPU"
            time.sleep(0.2)
            replayer = run.workers.replayer
            before = len(spawned)
            t0 = time.monotonic()
            run.discard()
            stopped = time.monotonic() - t0
        finally:
            lock._held[0] += 1
    run._prewarm.join(30)
    assert not run._prewarm.is_alive() and stopped < 5, stopped
    assert replayer.closed and replayer.channel is None and len(spawned) == before, spawned
    threads = [t for t in threading.enumerate() if t.name.startswith("judge-bench-replay")]
    for t in threads:
        t.join(10)
    assert not [t for t in threads if t.is_alive()]


def test_submit_in_interpreter_mode_says_speed_is_not_scored(tmp_path):
    from judge.options import Options
    from judge.session import Session

    p = find_problem("93")
    options = Options(device="cpu", interpret=True, sandbox="process", seed=3, group="small-ragged", max_examples=1)
    report = Session(p, p.reference_path, options).run()
    assert report.verdict.value == "AC"
    assert report.speed["scored"] is False and "interpreter mode" in report.speed["reason"]
    assert report.speed_points == 0 and report.score == 20
    # One start per correctness worker, none for a speed run.
    assert report.timing["worker_starts"] == report.timing.get("workers", 1) and report.timing["cases"] >= 1


def test_speed_table_shows_rates_roofline_and_flags_spills():
    import io

    from rich.console import Console

    from judge.timing.render import plot, render_speed

    row = {
        "params": {"M": 4096, "N": 4096, "K": 4096, "dtype": "float16"},
        "mode": "events",
        "time_s": 2.3e-4,
        "speedup": 0.95,
        "ci": [0.94, 0.96],
        "vs_pytorch": 0.9,
        "reference_vs_pytorch": 0.95,
        "gbps": None,
        "tflops": 597.6,
        "roofline_pct": 89.0,
    }
    speed = {
        "shapes": [row],
        "geomean_speedup": 0.95,
        "ci": [0.94, 0.96],
        "rounds": 7,
        "stopped": "ci",
        "timing_mode": "cuda",
        "kernels": [
            {
                "name": "matmul_kernel",
                "registers": 255,
                "spills": 12,
                "shared_bytes": 98304,
                "num_warps": 8,
                "num_stages": 4,
            }
        ],
        "ceilings": {
            "key": {"name": "NVIDIA H200"},
            "copy_bytes_per_s": 4.27e12,
            "matmul_flops_per_s": {"float16": 6.71e14},
        },
        "notes": [],
    }
    buf = io.StringIO()
    render_speed(speed, Console(file=buf, width=200))
    text = buf.getvalue()
    for want in ("597.6", "89.0%", "0.950x [0.940, 0.960]", "255 registers", "spills!", "4,270 GB/s", "7 rounds"):
        assert want in text, want
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "matplotlib is not installed" in plot(speed, "/nonexistent/x.png")


def _recorded_speed_sections():
    """Speed sections of real judge reports (the H200 calibration, tests/data/calibrate-call4.json)."""
    import json

    data = json.loads((Path(__file__).parent / "data" / "calibrate-call4.json").read_text())
    return [
        run["speed"]
        for problem in data["problems"].values()
        for run in problem.values()
        if isinstance(run, dict) and (run.get("speed") or {}).get("shapes")
    ]


def test_speed_table_fits_80_columns_without_cutting_a_shape():
    import io
    import re

    from rich.console import Console

    from judge.timing.render import render_speed, speed_columns

    sections = _recorded_speed_sections()
    assert len(sections) >= 3
    for speed in sections:
        buf = io.StringIO()
        render_speed(speed, Console(file=buf, width=80, color_system=None))
        text = buf.getvalue()
        assert "…" not in text, text
        assert all(len(line.rstrip()) <= 80 for line in text.splitlines())
        words = set(text.split())
        for row in speed["shapes"]:
            for key, value in row["params"].items():
                assert f"{key}={value}" in words, (key, value)  # every part of every shape, whole
        # One unit per time column: the header names it and no cell carries another.
        unit = speed_columns(speed)[2][0].split()[1]
        assert unit in ("µs", "ms", "s") and f"time {unit}" in text and f"profiler {unit}" in text
        assert not re.search(r"\d (µs|ms)\b", text)  # no cell carries a unit of its own


def test_speed_units_follow_the_column():
    from judge.timing.render import speed_columns

    slow = {
        "shapes": [
            {"params": {"n": 1}, "mode": "cpu", "time_s": 0.13407, "speedup": 1.0},
            {"params": {"n": 2}, "mode": "cpu", "time_s": 0.0021, "speedup": 1.0},
        ]
    }
    header, _, cells, _ = speed_columns(slow)[2]
    assert header == "time ms" and cells == ["134.07", "2.10"]


def test_plot_writes_a_png_of_a_recorded_speed_section(tmp_path):
    pytest.importorskip("matplotlib")  # in the dev and plot extras
    from judge.timing.render import plot

    speed = _recorded_speed_sections()[0]
    note = plot(speed, tmp_path / "speed.png")
    assert "written" in note and (tmp_path / "speed.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # A shape without an interval or a PyTorch time still plots.
    bare = dict(speed, shapes=[dict(r, ci=None, vs_pytorch=None) for r in speed["shapes"]])
    assert "written" in plot(bare, tmp_path / "bare.png")


def test_work_left_on_another_stream_is_counted():
    # Calls of 100 us on their own stream; in most samples the call left 400 us
    # of work on another stream, seen only by the end recorded after a device-wide sync.
    import dataclasses

    from judge.replies.records import BenchResult
    from judge.timing.measure import late_work_calls, net_times

    reply = BenchResult(
        mode="events",
        times=(100e-6,) * 3,
        device_times=(515e-6, 515e-6, 115e-6),
        sync_gaps=(14e-6, 15e-6, 16e-6),
        overhead=(0.0,),
    )
    assert net_times(reply) == pytest.approx([500e-6, 500e-6, 100e-6])
    assert late_work_calls(reply) == 3
    honest = dataclasses.replace(reply, device_times=(115e-6, 116e-6, 114e-6))
    assert late_work_calls(honest) == 0 and net_times(honest) == pytest.approx([100e-6] * 3)


def test_a_host_hiccup_in_one_sample_is_not_counted_as_work():
    # One sample's device-wide end came 300 us late (the host saw the sync return late):
    # judged by the median sample, that is not work left on another stream.
    from judge.replies.records import BenchResult
    from judge.timing.measure import late_work_calls, net_times

    reply = BenchResult(
        mode="events",
        times=(100e-6,) * 5,
        device_times=(115e-6, 116e-6, 415e-6, 114e-6, 115e-6),
        sync_gaps=(14e-6, 15e-6, 16e-6),
        overhead=(0.0,),
    )
    assert late_work_calls(reply) == 0 and net_times(reply) == pytest.approx([100e-6] * 5)


# ---------------------------------------------------------------------- the clock's bookkeeping


def _reply(**kw):
    """A parsed bench reply (judge.replies.records.BenchResult) from plain lists and dicts, as the channel makes it."""
    from judge.replies.parsers import parse_bench_reply

    msg = {"type": "bench_result", "status": "ok", "mode": "events", "times": []}
    msg.update(kw)
    return parse_bench_reply(msg, [])


def test_samples_of_k_calls_are_divided_by_k_after_the_overhead():
    from judge.timing.measure import net_times

    # 4 calls of 2 us per sample plus 1 us of empty-region overhead.
    reply = dict(
        times=[9e-6, 9e-6, 9.4e-6],
        per_sample=4,
        overhead=[1e-6, 1e-6, 1.2e-6],
        device_times=[20e-6, 20e-6, 21e-6],
        sync_gaps=[11e-6, 11e-6, 12e-6],
    )
    assert net_times(_reply(**reply)) == pytest.approx([2e-6, 2e-6, 2.1e-6])
    # Never below half the raw time, whatever the overhead says.
    assert net_times(_reply(**dict(reply, overhead=[50e-6]))) == pytest.approx([9e-6 / 8, 9e-6 / 8, 9.4e-6 / 8])


def test_invalid_samples_are_left_out_unless_all_are():
    from judge.timing.measure import net_times

    reply = dict(times=[10e-6, 90e-6, 10e-6], valid=[True, False, True], per_sample=1)
    assert net_times(_reply(**reply)) == pytest.approx([10e-6, 10e-6])  # the idle-GPU sample is dropped
    assert net_times(_reply(**dict(reply, valid=[False, False, False]))) == pytest.approx([10e-6, 90e-6, 10e-6])
    assert net_times(_reply(**dict(reply, valid=[True]))) == pytest.approx([10e-6, 90e-6, 10e-6])  # ignored


def test_late_work_on_another_stream_is_counted_per_sample_then_divided():
    from judge.timing.measure import late_work_calls, net_times

    reply = _reply(times=[200e-6] * 3, device_times=[615e-6, 215e-6, 615e-6], sync_gaps=[15e-6, 15e-6], per_sample=2)
    assert net_times(reply) == pytest.approx([300e-6, 100e-6, 300e-6])
    assert late_work_calls(reply) == 3


def test_a_sample_is_redone_with_a_doubled_hold_until_it_was_queued():
    from judge.untrusted.samples import Attempt, held_sample

    script = iter([False, False, True])
    tried = []

    def attempt(hold):
        tried.append(hold)
        return Attempt(queued=next(script), time=1e-4)

    got, retries, hold = held_sample(attempt, 1e-3, retries=3, max_hold=1.0)
    assert got.queued and retries == 2 and tried == [1e-3, 2e-3, 4e-3] and hold == 4e-3
    # Never queued: bounded by the retries, and by the longest hold.
    got, retries, hold = held_sample(lambda h: Attempt(queued=False), 1e-3, retries=3, max_hold=1.0)
    assert not got.queued and retries == 3 and hold == 8e-3
    got, retries, hold = held_sample(lambda h: Attempt(queued=False), 1e-3, retries=10, max_hold=3e-3)
    assert retries == 2 and hold == 3e-3


def test_the_next_hold_follows_what_the_host_needed():
    from judge.untrusted.samples import HOLD_MARGIN, HOLD_PAD, MIN_HOLD, next_hold

    assert next_hold(4e-3, [1e-3, 1.2e-3], retried=True) == 4e-3  # a doubled hold is kept
    assert next_hold(4e-3, [1e-3, 1.2e-3], retried=False) == pytest.approx(max(HOLD_MARGIN * 1.2e-3 + HOLD_PAD, 2e-3))
    assert next_hold(4e-3, [3.9e-3], retried=False) == 4e-3  # never above the hold that worked
    assert next_hold(1e-4, [1e-6], retried=False) >= MIN_HOLD


class _FakeEvent:
    script: list = []  # what the first query() of each event answers (then: passed)

    def __init__(self, enable_timing=False):
        self.queries = 0

    def record(self):
        pass

    def query(self):
        self.queries += 1
        if self.queries == 1 and _FakeEvent.script:
            return _FakeEvent.script.pop(0)
        return True

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return 0.05  # ms


class _FakeBuffer:
    def __init__(self, n):
        self.n = n

    def numel(self):
        return self.n

    def zero_(self):
        return self


def _fake_cuda_state(fn):
    """A BenchState whose CUDA calls are fakes (events answer from a script), with CPU inputs."""
    import types

    from judge.untrusted.bench import BenchState

    slept = []
    cuda = types.SimpleNamespace(Event=_FakeEvent, synchronize=lambda: None, _sleep=slept.append)
    fake = types.SimpleNamespace(cuda=cuda, uint8=torch.uint8, empty=lambda n, dtype=None, device=None: _FakeBuffer(n))
    worker = types.SimpleNamespace(torch=fake, device="cpu", fn=fn)
    return BenchState(worker), slept


def test_invalid_samples_are_retried_and_accounted_through_a_fake_gpu():
    from judge.untrusted.samples import MAX_HOLD, MAX_RETRIES, MIN_HOLD, OVERHEAD_SAMPLES

    p = find_problem("93")
    specs = p.golden.bench_args({"n": 64, "dtype": "float32"})
    state, slept = _fake_cuda_state(lambda x, y: torch.empty_like(x))
    # Overhead samples queued; sample 0 started early twice; samples 1 and 2 queued at once.
    _FakeEvent.script = [False] * OVERHEAD_SAMPLES + [True, True, False, False, False]
    state.holds[(0, 2)] = 1e-3
    out = state._samples(0, specs, 3, 2, 7, 2, 1024, True, True, None)
    assert out["retries"] == 2 and out["invalid"] == 0 and out["valid"] == [True, True, True]
    assert out["holds"][0] == out["holds"][1] == out["holds"][2]  # the doubled hold is kept for the request
    assert len(out["times"]) == 3 and len(out["overhead"]) == OVERHEAD_SAMPLES
    assert sorted(out["kept"]) == [0, 1, 2, 3, 4, 5] and out["launches"] == [0] * 6
    assert state.holds[(0, 2)] == out["hold_s"]  # the next request starts from it
    assert out["holds"][0] == pytest.approx(4e-3) and slept  # doubled twice; the spin kernel was launched
    # A GPU that always got there first: every sample is retried a bounded number of times, then marked invalid.
    _FakeEvent.script = [False] * OVERHEAD_SAMPLES + [True] * 100
    state.holds[(0, 1)] = 1e-4
    out = state._samples(0, specs, 3, 1, 8, 2, 1024, False, True, None)
    assert out["invalid"] == 3 and out["valid"] == [False] * 3
    assert out["retries"] == min(3 * MAX_RETRIES, 2 * 3) and _FakeEvent.script  # bounded per sample and request
    # With no hold kept yet, the first comes from the host time of a watched call.
    _FakeEvent.script = [False] * (OVERHEAD_SAMPLES + 2)
    state.holds.clear()
    out = state._samples(0, specs, 2, 4, 9, 2, 1024, False, True, None)
    assert MIN_HOLD <= out["holds"][0] <= MAX_HOLD and out["valid"] == [True, True]
    _FakeEvent.script = []


def test_per_sample_is_chosen_for_100_us_of_work_and_the_sets_that_fit():
    from judge.timing.plan import choose_per_sample

    assert choose_per_sample(250e-6) == 1 and choose_per_sample(100e-6) == 1
    assert choose_per_sample(2e-6) == 50
    assert choose_per_sample(0.5e-6) == 64  # at most 64
    assert choose_per_sample(40e-6) == 3
    assert choose_per_sample(2e-6, set_bytes=1 << 30, set_budget=8 << 30) == 8  # no more sets than fit
    assert choose_per_sample(0.0) == 1 and choose_per_sample(float("nan")) == 1


@pytest.mark.parametrize(
    "event, profiler, forged, disagree",
    [
        (100e-6, 100e-6, False, False),
        (105e-6, 100e-6, False, False),  # within 10%
        (115e-6, 100e-6, False, True),  # a note
        (80e-6, 100e-6, False, True),
        (40e-6, 100e-6, True, True),  # the events missed most of the kernels' span: forged
        (1.0e-6, 2.5e-6, False, True),  # far below, but only 1.5 us apart: a note, not RJ
        (2.1e-6, 2.3e-6, False, False),  # 9% apart
        (2.0e-6, 2.4e-6, False, False),  # 17% but only 0.4 us: event resolution
        (None, 100e-6, False, False),
        (100e-6, None, False, False),
    ],
)
def test_events_against_the_profiler(event, profiler, forged, disagree):
    got = checks.compare_clocks(event, profiler)
    assert got.forged == forged and got.disagree == disagree
    assert (got.message is not None) == disagree
    if forged:
        assert "profiler" in got.message


def _rec(name, gpu, start, end, corr=0, linked=0, kind=""):
    from judge.untrusted.profiling import Record

    return Record(name, gpu, start, end, corr, linked, kind)


def _trace(kinds=True, shift=0):
    """Two calls; the judge's hold (spin) and fill before each; call 0 a Triton kernel launched by
    cuLaunchKernelEx inside the range, call 1 two aten kernels (one linked, one through its runtime call)."""
    k = (lambda x: x) if kinds else (lambda x: "")
    return [
        _rec("aten::normal_", False, 0, 10, corr=1, kind=k("cpu_op")),
        _rec("cudaLaunchKernel", False, 2 + shift, 3 + shift, corr=500, kind=k("cuda_runtime")),
        _rec("cudaLaunchKernel", False, 20 + shift, 21 + shift, corr=501, kind=k("cuda_runtime")),  # the hold
        _rec("judge.call.0", False, 30, 60, corr=2, kind=k("cpu_op")),
        _rec("cuLaunchKernelEx", False, 40 + shift, 45 + shift, corr=502, kind=k("cuda_driver")),
        _rec("judge.call.1", False, 70, 120, corr=3, kind=k("cpu_op")),
        _rec("aten::add", False, 75, 90, corr=4, kind=k("cpu_op")),
        _rec("cudaLaunchKernel", False, 80 + shift, 85 + shift, corr=503, kind=k("cuda_runtime")),
        _rec("aten::mul", False, 95, 110, corr=5, kind=k("cpu_op")),
        _rec("cudaLaunchKernel", False, 100 + shift, 105 + shift, corr=504, kind=k("cuda_runtime")),
        # GPU side (the GPU runs them later, behind the hold)
        _rec("normal_kernel", True, 1000, 1100, corr=500, linked=1, kind=k("kernel")),
        _rec("at::cuda::spin_kernel(long)", True, 1100, 5000, corr=501, kind=k("kernel")),
        _rec("_add_kernel", True, 5001, 5003, corr=502, linked=0, kind=k("kernel")),
        _rec("add_kernel", True, 5004, 5010, corr=503, linked=4, kind=k("kernel")),
        _rec("mul_kernel", True, 5011, 5020, corr=504, linked=0, kind=k("kernel")),
        _rec("judge.call.1", True, 5004, 5020, corr=3, kind=k("gpu_user_annotation")),
    ]


@pytest.mark.parametrize("kinds", [True, False])
def test_profiler_records_are_attributed_to_the_call_that_launched_them(kinds):
    from judge.untrusted.profiling import attribute, summarize

    got = attribute(_trace(kinds))
    assert got["calls"] == {0: [(5001, 5003)], 1: [(5004, 5010), (5011, 5020)]}
    assert got["method"] == "linked+runtime" and got["note"] is None
    one = summarize(_trace(kinds), [[0], [1]])
    assert one["status"] == "ok"
    assert [s["span_s"] for s in one["samples"]] == pytest.approx([2e-9, 16e-9])
    assert one["samples"][1]["busy_s"] == pytest.approx(15e-9) and one["samples"][1]["kernels"] == 2
    both = summarize(_trace(kinds), [[0, 1]])  # one sample of K = 2
    assert both["samples"][0]["span_s"] == pytest.approx(19e-9)
    assert both["samples"][0]["calls"] == pytest.approx([2e-9, 16e-9])


def test_misaligned_host_clocks_drop_the_runtime_attribution():
    from judge.untrusted.profiling import attribute, summarize

    got = attribute(_trace(shift=15))  # the hold's launch now falls inside call 0's range
    assert "not aligned" in got["note"]
    assert got["calls"] == {0: [], 1: [(5004, 5010)]}  # only what Kineto linked
    out = summarize(_trace(shift=15), [[0], [1]])
    assert out["status"] == "ok" and "1 of 2 samples" in out["note"]  # the clock of the samples it could attribute
    assert [s["kernels"] for s in out["samples"]] == [0, 1]
    assert summarize([], [[0]])["status"] == "no kernels"


def test_kineto_events_are_read_with_old_and_new_method_names():
    import types

    from judge.untrusted.profiling import records

    new = types.SimpleNamespace(
        name=lambda: "k",
        device_type=lambda: "DeviceType.CUDA",
        start_ns=lambda: 1000,
        duration_ns=lambda: 500,
        correlation_id=lambda: 7,
        linked_correlation_id=lambda: 0,
        activity_type=lambda: "kernel",
    )
    old = types.SimpleNamespace(
        name=lambda: "k",
        device_type=lambda: "DeviceType.CPU",
        start_us=lambda: 1.5,
        duration_us=lambda: 2,
        correlation_id=lambda: 8,
        linked_correlation_id=lambda: 0,
    )
    broken = types.SimpleNamespace(name=lambda: 1 / 0)
    got = records([new, old, broken])
    assert [(r.gpu, r.start, r.end, r.corr, r.kind) for r in got] == [
        (True, 1000, 1500, 7, "kernel"),
        (False, 1500, 3500, 8, ""),
    ]


def test_profile_summary_is_per_call():
    from judge.timing.measure import profile_summary

    reply = _reply(
        per_sample=4,
        times=[40e-6, 41e-6],
        overhead=[0.0],
        profile={
            "status": "ok",
            "method": "linked",
            "samples": [
                {"span_s": 36e-6, "busy_s": 30e-6, "kernels": 4, "calls": [8e-6, 8e-6, 8e-6, 9e-6]},
                {"span_s": 40e-6, "busy_s": 30e-6, "kernels": 4, "calls": [8e-6, 8e-6, 8e-6, 8e-6]},
                {"span_s": 0.0, "busy_s": 0.0, "kernels": 0, "calls": [0, 0, 0, 0]},
            ],
        },
    )
    got = profile_summary(reply)
    assert got["time_s"] == pytest.approx(9.5e-6) and got["busy_s"] == pytest.approx(7.5e-6)
    assert got["call_span_s"] == pytest.approx(8e-6) and got["samples"] == 2
    assert got["event_time_s"] == pytest.approx(10.125e-6)
    assert profile_summary(_reply(profile={"status": "unavailable", "note": "no CUPTI"}))["status"] == "unavailable"


def test_the_profiler_changes_nothing_the_integrity_check_watches():
    from judge.untrusted import integrity, profiling

    before = integrity.snapshot()
    prof, why = profiling.start(torch, cuda=False)
    assert why is None
    during = integrity.snapshot()
    with profiling.range_factory(torch)("judge.call.0"):
        torch.ones(3).add_(1)
    recs, why = profiling.stop(prof)
    assert why is None and any(r.name == "judge.call.0" for r in recs)
    assert integrity.changed(before) == [] and integrity.changed(during) == []
    assert "torch.autograd.profiler.profile.__enter__" in before  # the profiler is in the snapshot


def test_without_correlations_the_gpu_order_between_hold_and_marker_is_used():
    from judge.untrusted.profiling import summarize

    spin = "at::cuda::(anonymous namespace)::spin_kernel(long)"
    recs = [
        _rec("fill", True, 0, 100, kind="kernel"),
        _rec(spin, True, 100, 200_000, kind="kernel"),  # an overhead sample's hold: no marker
        # sample 0, first try (the GPU started early: its marker is there, the sample was redone)
        _rec(spin, True, 300_000, 340_000, kind="kernel"),
        _rec("_add_kernel", True, 345_000, 347_000, kind="kernel"),
        _rec(spin, True, 347_100, 348_000, kind="kernel"),
        # sample 0, second try
        _rec(spin, True, 400_000, 480_000, kind="kernel"),
        _rec("_add_kernel", True, 480_500, 482_500, kind="kernel"),
        _rec(spin, True, 482_600, 483_500, kind="kernel"),
        # sample 1
        _rec("fill", True, 490_000, 491_000, kind="kernel"),
        _rec(spin, True, 500_000, 580_000, kind="kernel"),
        _rec("_add_kernel", True, 580_400, 582_000, kind="kernel"),
        _rec("_add_kernel", True, 582_500, 584_000, kind="kernel"),
        _rec(spin, True, 584_100, 585_000, kind="kernel"),
    ]
    got = summarize(recs, [[0], [1, 2]], attempts=[2, 1])
    assert got["method"] == "gpu-order" and got["status"] == "ok"
    assert [s["span_s"] for s in got["samples"]] == pytest.approx([2e-6, 3.6e-6])
    assert summarize(recs, [[0], [1, 2]], attempts=[1, 1])["status"] == "no kernels"  # markers do not add up


def test_profiled_samples_the_gpu_started_early_are_not_used():
    from judge.timing.measure import profile_summary

    sample = {"span_s": 10e-6, "busy_s": 9e-6, "kernels": 2, "calls": [10e-6]}
    idle = {"span_s": 80e-6, "busy_s": 9e-6, "kernels": 2, "calls": [80e-6]}
    reply = dict(
        per_sample=1,
        times=[11e-6, 11e-6, 90e-6],
        valid=[True, True, False],
        profile={"status": "ok", "samples": [sample, sample, idle]},
    )
    assert profile_summary(_reply(**reply))["time_s"] == pytest.approx(10e-6)
    none = profile_summary(_reply(**dict(reply, valid=[False, False, False])))
    assert none["status"] == "unqueued" and "time_s" not in none


def _result_with_profiles(tmp_path, sub_prof, ref_prof, host_gap=None):
    from judge.timing.contenders import Contender
    from judge.timing.result import speed_section

    p = find_problem("93")
    cfg = BenchConfig(shapes=[{"n": 4096, "dtype": "float32"}], profile_samples=0)
    run = SpeedRun(
        p,
        p.reference_path,
        device="cpu",
        interpret=True,
        gpu=None,
        backend=None,
        limits=None,
        scratch=tmp_path,
        config=cfg,
    )
    contenders = [Contender("submission", None, False, 1.0), Contender("reference", None, True, 1.0)]
    run.measure.profiles = {
        ("submission", 0): {"status": "ok", "time_s": sub_prof},
        ("reference", 0): {"status": "ok", "time_s": ref_prof},
    }
    plan = {"mode": "events", "per_sample": 50, "calls": 10, "flush_bytes": 1, "specs": []}
    rounds = [{0: ([2.0e-6] * 10, [1.0e-6] * 10)} for _ in range(3)]
    for who, gap in (host_gap or {}).items():
        run.measure.host_gaps[(who, 0)] = gap
    return speed_section(
        p,
        cfg,
        run.score,
        run.measure,
        contenders,
        run.notes,
        cuda=False,
        ceilings={},
        plans=[plan],
        rounds=rounds,
        torch_times={0: []},
        stopped="ci",
        checked=[{"calls": [0]}],
        phases={},
    )


def test_a_host_clock_far_ahead_of_the_events_is_held_against_the_profiler(tmp_path):
    # On the H200 a host with every core busy put 1553.7 us of host time around 186.9 us of events, for a
    # correct kernel (tests/gpu/logs/2026-12-01c/call2/bench.txt): RJ then. Excused now where the reference was
    # as far behind at the same shape and the submission's profiler figure agrees with its events.
    gap = checks.host_gap(1.0e-6, 1553.7e-6)
    assert gap and "by the host clock" in gap
    assert any("by the host clock" in m for m in honest(event_median=1.0e-6, host_median=1553.7e-6))
    both = {"submission": gap, "reference": checks.host_gap(2.0e-6, 1560e-6)}
    speed = _result_with_profiles(tmp_path, sub_prof=1.02e-6, ref_prof=2.0e-6, host_gap=both)
    assert [n for n in speed["notes"] if "a busy host, not a forged timer" in n]
    cases = {
        "no profiler figure vouches for the events": dict(sub_prof=None, host_gap=both),
        "the reference's host kept up: not a busy host": dict(sub_prof=1.02e-6, host_gap={"submission": gap}),
        "a profiler figure far below the events (the submission's own to make)": dict(sub_prof=0.05e-6, host_gap=both),
    }
    for why, kw in cases.items():
        with pytest.raises(BenchFailed) as exc:
            _result_with_profiles(tmp_path, ref_prof=2.0e-6, **kw)
        assert exc.value.verdict == "RJ" and "by the host clock" in exc.value.message, why
    # The kernels ran far longer than the events say: the forged timer it looked like.
    with pytest.raises(BenchFailed) as exc:
        _result_with_profiles(tmp_path, sub_prof=6e-6, ref_prof=2.0e-6, host_gap=both)
    assert exc.value.verdict == "RJ" and "forged timer" in exc.value.message


def test_an_event_clock_far_below_the_kernels_span_is_a_forged_timer(tmp_path):
    # The submission's events say 1 us per call, its kernels ran 6 us: RJ.
    with pytest.raises(BenchFailed) as exc:
        _result_with_profiles(tmp_path, sub_prof=6e-6, ref_prof=2.0e-6)
    assert exc.value.verdict == "RJ" and "forged timer" in exc.value.message
    # Agreeing clocks: both are in the report.
    speed = _result_with_profiles(tmp_path, sub_prof=1.02e-6, ref_prof=2.0e-6)
    (row,) = speed["shapes"]
    assert row["profiler_time_s"] == 1.02e-6 and row["reference_profiler_time_s"] == 2.0e-6
    assert row["calls_per_sample"] == 50 and row["calls_per_round"] == 500
    assert not [n for n in speed["notes"] if "profiler" in n]


def test_a_profiler_clock_the_reference_disagrees_with_judges_nobody(tmp_path):
    speed = _result_with_profiles(tmp_path, sub_prof=6e-6, ref_prof=12e-6)
    notes = [n for n in speed["notes"] if "not used to judge" in n]
    assert len(notes) == 2 and speed["shapes"][0]["profiler_time_s"] == 6e-6


def test_the_clock_fields_of_a_bench_reply_are_parsed_with_bounds():
    from judge.replies.fields import MalformedReply

    reply = _reply(
        times=[1e-4],
        per_sample=3,
        valid=[True],
        retries=2,
        invalid=0,
        hold_s=2e-3,
        holds=[2e-3],
        enqueue=[1e-3],
        attempts=[3],
        profile={
            "status": "ok",
            "method": "linked",
            "records": 40,
            "samples": [{"span_s": 9e-5, "busy_s": 8e-5, "kernels": 3, "calls": [3e-5] * 3, "ranges": 3}],
        },
    )
    assert reply.per_sample == 3 and reply.valid == (True,) and reply.attempts == (3,) and reply.retries == 2
    assert reply.profile.samples[0].kernels == 3 and reply.profile.samples[0].calls == (3e-5,) * 3
    for bad in (
        {"valid": [1]},
        {"per_sample": 0},
        {"profile": {"status": "great"}},
        {"profile": {"status": "ok", "samples": [{"span_s": "long"}]}},
        {"profile": [1]},
    ):
        with pytest.raises(MalformedReply):
            _reply(times=[1e-4], **bad)


def test_graph_plan_times_submission_and_reference_the_same_way():
    from judge.timing.plan import graph_plan

    assert graph_plan({"submission": True, "reference": True, "pytorch": False}) == {
        "submission": True,
        "reference": True,
        "pytorch": False,
    }
    # One of the two cannot be captured: both are timed from the stream; the baseline keeps its own way.
    assert graph_plan({"submission": False, "reference": True, "pytorch": True}) == {
        "submission": False,
        "reference": False,
        "pytorch": True,
    }
    assert graph_plan({"submission": True, "reference": False}) == {"submission": False, "reference": False}


def test_a_replayed_sample_keeps_copies_of_its_outputs():
    import torch

    from judge.untrusted.samples import _copied

    a, b = torch.ones(3), torch.zeros(2)
    got = _copied((a, [b]))
    assert type(got) is tuple and type(got[1]) is list
    a.fill_(7)
    b.fill_(7)  # the next replay rewrites the graph's outputs: the copies keep this sample's
    assert got[0].tolist() == [1.0, 1.0, 1.0] and got[1][0].tolist() == [0.0, 0.0]
    assert _copied(None) is None


def test_a_jobs_host_gpu_is_its_own_processes_cuda_0(monkeypatch):
    # judge grade runs a job on host GPU 1 with CUDA_VISIBLE_DEVICES=1: there the golden model's device and the
    # ceilings' are torch's cuda:0, while the sandboxes and the GPU lock keep the host index 1.
    from judge.options import torch_device, torch_index

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert torch_device(1) == "cuda:0" and torch_index(1) == 0
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    assert torch_device(3) == "cuda:1"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert torch_device(1) == "cuda:1" and torch_device(None) == "cuda:0"


def test_a_judges_cases_wait_for_another_judges_speed_run_and_the_wait_is_not_their_time(
    tmp_path, monkeypatch, repo_root
):
    from judge.session import Session

    monkeypatch.setenv("JUDGE_LOCK_DIR", str(tmp_path))
    p = find_problem("93")
    said = []
    session = Session(p, p.reference_path, Options(device="cuda", interpret=False, gpu=3, log=said.append))
    timing, held, release = _holder(tmp_path, repo_root, "exclusive", "timing")
    try:
        assert _wait_for(held), "the other judge never took the GPU"
        threading.Timer(0.8, lambda: release.write_text("")).start()
        t0 = time.monotonic()
        with session.gpu.shared():
            waited = time.monotonic() - t0
        assert waited >= 0.7 and session.gpu.wait_seconds == pytest.approx(waited, abs=0.1)
        assert said and "speed run on GPU 3" in said[0]
        with session.gpu.shared():  # nobody timing: no wait to speak of
            pass
        assert session.gpu.wait_seconds == pytest.approx(waited, abs=0.1)
    finally:
        release.write_text("")
        timing.wait(timeout=60)
    # Four lanes wait for the same speed run at once: the run waited once, not four times.
    timing, held, release = _holder(tmp_path, repo_root, "exclusive", "timing2")
    try:
        assert _wait_for(held)
        before = session.gpu.wait_seconds

        def lane():
            with session.gpu.shared():
                pass

        lanes = [threading.Thread(target=lane) for _ in range(4)]
        t0 = time.monotonic()
        for t in lanes:
            t.start()
        threading.Timer(0.8, lambda: release.write_text("")).start()
        for t in lanes:
            t.join(timeout=30)
        wall = time.monotonic() - t0
        assert 0.7 <= session.gpu.wait_seconds - before <= wall + 0.05
    finally:
        release.write_text("")
        timing.wait(timeout=60)


def _spied_session(monkeypatch, path, events, **extra):
    """A session of 93 in interpreter mode that runs a speed run (as on a GPU), with its groups' ends and the
    speed run's spawn and discard recorded in ``events``."""
    import judge.session as session_mod
    from judge import group_loop, speed_stage
    from judge.options import Options
    from judge.session import Session
    from judge.timing.speedrun import SpeedRun
    from judge.verdicts import Verdict

    def no_speed_run(p, o, v=None):
        return None if v in (None, Verdict.AC) else "tests failed"

    monkeypatch.setattr(session_mod, "no_speed_run", no_speed_run)
    monkeypatch.setattr(speed_stage, "no_speed_run", no_speed_run)
    spawn, discard, run_group = SpeedRun.spawn, SpeedRun.discard, group_loop.GroupLoop.run_group

    def spied_spawn(self):
        if self.workers.spawned is None:  # the spawn itself (later calls, from prewarm and run, are no-ops)
            events.append(("spawn", self))
        spawn(self)

    def spied_discard(self):
        # Spawned, and greeted by the warm-up thread (prewarm) or not yet; and the replay worker.
        workers = self.workers
        procs = [client.proc for _, client, _, _ in workers.spawned or []] + [c.client.proc for c in workers.contenders]
        if workers.replayer is not None and workers.replayer.channel is not None:
            procs.append(workers.replayer.channel.proc)
        events.append(("discard", self, procs))
        discard(self)

    def spied_group(self, g):
        result = run_group(self, g)
        events.append(("group", g.name, result.passed))
        return result

    monkeypatch.setattr(SpeedRun, "spawn", spied_spawn)
    monkeypatch.setattr(SpeedRun, "discard", spied_discard)
    monkeypatch.setattr(group_loop.GroupLoop, "run_group", spied_group)
    options = Options(
        device="cpu",
        interpret=True,
        sandbox="process",
        seed=3,
        max_examples=1,
        workers=1,
        bench={"min_rounds": 1, "max_rounds": 1, "torch_baseline": False},
        **extra,
    )
    return Session(find_problem("93"), path, options).run()


def test_the_speed_runs_workers_are_spawned_once_the_first_group_passed(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGE_CACHE_DIR", str(tmp_path / "cache"))
    events = []
    report = _spied_session(monkeypatch, find_problem("93").reference_path, events)
    assert report.verdict.value == "AC" and report.speed["scored"], report.speed
    kinds = [e[0] for e in events]
    assert kinds.index("spawn") == 1, kinds  # right after the first group, then the later groups ran
    assert kinds.count("group") >= 2 and "discard" not in kinds, kinds
    # One SpeedRun: the one spawned during the tests is the one that ran (its start calls spawn, a no-op).
    assert len({id(e[1]) for e in events if e[0] == "spawn"}) == 1
    run = events[1][1]
    assert not run.workers.spawned and all(c.client.proc.popen.poll() is not None for c in run.workers.contenders)
    # Their warm-up ran ahead too, beside the later groups: every shape, before the speed run proper.
    phases = report.speed["phases"]
    assert phases["prewarmed_shapes"] == len(run.config.shapes) and phases["prewarm_seconds"] > 0, phases


def test_a_lone_submits_speed_workers_start_with_the_session_and_stop_when_it_fails(tmp_path, monkeypatch):
    # options.speed_early (judge.cli sets it for a lone submit on a GPU): spawned before the first group, and
    # stopped unused when a group fails, as after the first group.
    monkeypatch.setenv("JUDGE_CACHE_DIR", str(tmp_path / "cache"))
    events = []
    report = _spied_session(monkeypatch, find_problem("93").reference_path, events, speed_early=True)
    assert report.verdict.value == "AC" and report.speed["scored"], report.speed
    kinds = [e[0] for e in events]
    assert kinds[0] == "spawn" and kinds.count("spawn") == 1 and "discard" not in kinds, kinds
    assert report.speed["phases"]["prewarmed_shapes"] == len(events[0][1].config.shapes)
    path = tmp_path / "wrong.py"
    source = find_problem("93").reference_path.read_text()
    path.write_text(source.replace("_add_kernel[grid](x, y, out, n,", "_add_kernel[grid](x, y, out, n - 1,", 1))
    events.clear()
    report = _spied_session(monkeypatch, path, events, speed_early=True)
    assert report.verdict.value == "WA" and not report.speed["scored"], report.message
    kinds = [e[0] for e in events]
    # (The spies wrap the first session's spies: each event is recorded twice.)
    # Stopped right after the first group, which this file fails (n - 1 everywhere).
    later = next(i for i, e in enumerate(events) if e[0] == "group" and e[1] != events[kinds.index("group")][1])
    assert kinds[0] == "spawn" and kinds.index("discard") < later, events
    assert len({id(e[1]) for e in events if e[0] in ("spawn", "discard")}) == 1
    run, procs = next(e for e in events if e[0] == "discard")[1:]
    assert len(procs) == 3 and not run.workers.contenders and all(proc.popen.poll() is not None for proc in procs)


def test_spawned_speed_workers_are_stopped_when_a_later_group_fails(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGE_CACHE_DIR", str(tmp_path / "cache"))
    # Right on the first group's sizes (n <= 3000), one element short beyond them (later groups reach them).
    path = tmp_path / "late_wrong.py"
    source = find_problem("93").reference_path.read_text()
    launch = "_add_kernel[grid](x, y, out, n,"
    assert launch in source
    path.write_text(source.replace(launch, "_add_kernel[grid](x, y, out, n if n <= 3000 else n - 1,", 1))
    events = []
    report = _spied_session(monkeypatch, path, events)
    assert report.verdict.value == "WA" and not report.speed["scored"], report.message
    kinds = [e[0] for e in events]
    assert kinds.count("spawn") == 1 and kinds[-1] == "discard" and kinds.index("spawn") == 1, kinds
    run, procs = events[-1][1], events[-1][2]
    assert run.workers.spawned == [] and run.workers.replayer is None and not run.workers.contenders
    assert len(procs) == 3 and all(proc.popen.poll() is not None for proc in procs)  # submission, reference, replay


def test_a_gpu_speed_run_holds_the_gpu_alone_while_it_times_and_with_other_judges_for_its_checks(tmp_path, monkeypatch):
    # The lock's real files (judge.timing.lock), probed from another open file description the way another
    # judge would take it: the rounds and the profiler clock hold it exclusively; each check and replay holds
    # it shared (the ``shared`` _finish is given), beside other judges' cases, and between them the run holds
    # nothing another judge's speed run waits for.
    from judge.timing import lock

    monkeypatch.setenv("JUDGE_LOCK_DIR", str(tmp_path))
    p = find_problem("93")
    run = SpeedRun(
        p,
        p.reference_path,
        device="cuda",
        interpret=False,
        gpu=0,
        backend=None,
        limits=None,
        scratch=tmp_path,
        config=BenchConfig(shapes=[{"n": 8, "dtype": "float32"}]),
    )

    def held() -> str:
        return _held(lock.lock_path(0))

    seen = {}

    def timed():
        seen["timed"] = held()
        return {"state": 1}

    def finish(state, shared=contextlib.nullcontext):
        seen["finish"] = held()
        with shared():
            seen["each check"] = held()
        return {"finished": state}

    monkeypatch.setattr(run, "_timed", timed)
    monkeypatch.setattr(run, "_trim", lambda state: seen.setdefault("trim", held()))
    monkeypatch.setattr(run, "_finish", finish)
    monkeypatch.setattr(run, "_close", lambda: seen.setdefault("closed", held()))
    assert run.run() == {"finished": {"state": 1}}
    assert seen["timed"] == "exclusive"
    # The run lets go of its rounds' memory before it gives the GPU back (_trim).
    assert seen["trim"] == "exclusive"
    assert seen["finish"] == "free" and seen["each check"] == "shared"
    assert seen["closed"] == "free" and held() == "free"  # the workers end after the checks, beside the others


def _held(path) -> str:
    """How another judge finds GPU lock file ``path``: "exclusive", "shared" or "free" (probed from an open
    file description of its own, as another judge would take it)."""
    import fcntl

    fd = os.open(path, os.O_RDONLY)
    try:
        for how, name in ((fcntl.LOCK_SH, "exclusive"), (fcntl.LOCK_EX, "shared")):
            try:
                fcntl.flock(fd, how | fcntl.LOCK_NB)
                fcntl.flock(fd, fcntl.LOCK_UN)
            except BlockingIOError:
                return name  # a shared probe refused: someone holds it exclusively; else shared
        return "free"
    finally:
        os.close(fd)


def test_a_gpu_speed_runs_warm_up_runs_ahead_beside_other_judges_and_only_the_paces_under_the_lock(
    tmp_path, monkeypatch
):
    # The warm-up (compiles, the watched call) is correctness work: the prewarm thread runs it while the
    # session's later groups run, each shape's requests holding the GPU shared as a case does. Under the
    # exclusive lock the plan of a prewarmed shape only measures the workers' paces again (no watch).
    from judge.timing import lock

    monkeypatch.setenv("JUDGE_LOCK_DIR", str(tmp_path))
    p = find_problem("93")
    shapes = [{"n": 8, "dtype": "float32"}, {"n": 16, "dtype": "float32"}]
    run = SpeedRun(
        p,
        p.reference_path,
        device="cuda",
        interpret=False,
        gpu=0,
        backend=None,
        limits=None,
        scratch=tmp_path,
        config=BenchConfig(shapes=shapes),
    )
    run.planner.ceilings = {"l2_bytes": 1 << 20}  # no GPU here to read it from
    seen = []

    def warm_up(s, params, *, retune=False, keep=False):
        seen.append((s, retune, _held(lock.lock_path(0)), threading.current_thread().name))
        return {"submission": 1e-3, "reference": 1e-3}, 4 * params["n"]

    monkeypatch.setattr(run, "spawn", lambda: None)
    monkeypatch.setattr(run.workers, "start", lambda: None)
    monkeypatch.setattr(run.planner, "warm_up", warm_up)
    run.prewarm(shared=lambda cancel=None: lock.gpu_shared(0, cancel=cancel))
    run._join_prewarm()
    assert seen == [(0, False, "shared", "judge-speed-prewarm"), (1, False, "shared", "judge-speed-prewarm")]
    assert run._prewarm_seconds is not None and sorted(run.planner.warmed) == [0, 1]
    seen.clear()
    with lock.gpu_lock(0):
        plans = [run.planner.plan(s, params) for s, params in enumerate(shapes)]
    # Under the lock each prewarmed shape is warmed up again (compiled by now), its autotuners asked to tune anew.
    assert seen == [(0, True, "exclusive", "MainThread"), (1, True, "exclusive", "MainThread")]
    assert all(plan["per_sample"] == 1 and plan["estimates"]["submission"] == 1e-3 for plan in plans)


def test_a_prewarmed_shapes_second_warm_up_goes_through_the_rulebook_and_asks_to_tune_again(tmp_path, monkeypatch):
    # What the submission does during the warm-up under the lock is judged as at any warm-up: a timer swapped
    # there (and left in place for the rounds) is RJ. The request asks every worker to forget its autotuners'
    # choices (made beside other work) and tune again.
    from judge.replies import records
    from judge.timing import plan
    from judge.timing.contenders import Contender

    p = find_problem("93")
    run = SpeedRun(
        p,
        p.reference_path,
        device="cuda",
        interpret=False,
        gpu=0,
        backend=None,
        limits=None,
        scratch=tmp_path,
        config=BenchConfig(shapes=[{"n": 4096, "dtype": "float32"}], graphs=False),
    )
    run.planner.ceilings = {"l2_bytes": 50 << 20}
    run.workers.contenders = [Contender("submission", None, False, 60), Contender("reference", None, True, 60)]
    sent = []

    def request(c, msg, parse=None):
        sent.append((c.name, msg.get("watch"), msg.get("retune")))
        tampered = ("torch.cuda.Event.elapsed_time",) if c.name == "submission" else ()
        return records.BenchResult(
            mode="events", times=(5e-6, 5e-6), evidence=records.Evidence(tampered=tampered), out_bytes=16384
        ), 0.01

    monkeypatch.setattr(plan, "request", request)
    run.planner.warmed.add(0)  # warmed up ahead
    with pytest.raises(BenchFailed) as failed:
        run.planner.plan(0, run.config.shapes[0])
    assert failed.value.verdict == "RJ" and "elapsed_time" in failed.value.message
    assert sent == [("submission", True, True)]


def test_forget_tuning_makes_the_autotuners_that_timed_their_configs_tune_again():
    from judge.untrusted import launches

    class Tuner:  # the two parts of triton.runtime.autotuner.Autotuner the worker's guard uses
        def __init__(self):
            self.cache = {}

        def _bench(self, *args, config=None):
            return 1.0

    launches._wrap_bench(Tuner)
    timed, untimed = Tuner(), Tuner()
    timed._bench(config="a")
    timed.cache[("n", 4096)] = "config a"
    untimed.cache[("n", 8)] = "only config"  # never benchmarked: a single config, say
    assert launches.forget_tuning() == 1
    assert timed.cache == {} and untimed.cache == {("n", 8): "only config"}


def test_what_the_warm_up_ahead_raises_is_the_speed_runs_failure_and_a_discarded_run_drops_it(tmp_path, monkeypatch):
    p = find_problem("93")
    made = []
    for discarded in (False, True):
        run = SpeedRun(
            p,
            p.reference_path,
            device="cuda",
            interpret=False,
            gpu=0,
            backend=None,
            limits=None,
            scratch=tmp_path,
            config=BenchConfig(shapes=[{"n": 8, "dtype": "float32"}]),
        )
        run.planner.ceilings = {"l2_bytes": 1 << 20}

        def warm_up(s, params, *, retune=False, keep=False):
            raise BenchFailed("RJ", "no kernel of the file ran at the warm-up")

        monkeypatch.setattr(run, "spawn", lambda: None)
        monkeypatch.setattr(run.workers, "start", lambda: None)
        monkeypatch.setattr(run.planner, "warm_up", warm_up)
        monkeypatch.setattr(run, "_timed", lambda **kw: made.append("timed"))
        run.prewarm()
        if discarded:
            run.discard()  # a later group failed: the run is dropped, and what the warm-up found with it
            assert not run.workers.contenders and not (run._prewarm and run._prewarm.is_alive())
            continue
        closed = []
        monkeypatch.setattr(run, "_close", lambda: closed.append(True))
        with pytest.raises(BenchFailed) as failed:
            run.run()
        assert failed.value.verdict == "RJ" and "warm-up" in failed.value.message
        assert closed  # its workers end with it (the session has handed the run over: nobody else closes them)
    assert made == []  # neither run timed anything


def test_a_judged_submission_times_the_pytorch_baseline_only_when_asked(tmp_path):
    from judge.session import Session

    # The baseline earns no points: submit, grade and serve leave it out of the speed run (a third of its
    # requests); `submit --pytorch` and `judge bench` (which keeps the problem's setting) time it.
    p = find_problem("94")
    assert p.spec["bench"].get("torch_baseline", True)  # the problem asks for it: bench times it
    made = {}
    for bench in ({}, {"torch_baseline": None, "ci_target": None}, {"torch_baseline": True}):
        session = Session(p, p.reference_path, Options(device="cpu", interpret=True, sandbox="process", bench=bench))
        session.speed.backend = None
        run = session.speed._new(tmp_path)
        made[repr(bench)] = run.config.torch_baseline
    assert list(made.values()) == [False, False, True], made
    assert config_for(p, interpret=False).torch_baseline  # judge bench: the problem's own setting


def test_submit_pytorch_flag_reaches_the_speed_run(monkeypatch, tmp_path):
    from click.testing import CliRunner

    from judge import cli

    seen = []
    monkeypatch.setattr(cli, "_run", lambda *a, **kw: seen.append(kw["bench"]))
    for flags in ([], ["--pytorch"]):
        result = CliRunner().invoke(cli.cli, ["submit", "94", str(tmp_path / "x.py"), *flags])
        assert result.exit_code == 0, result.output
    assert seen[0].get("torch_baseline") is None and seen[1]["torch_baseline"] is True


def test_before_its_checks_a_speed_run_fetches_the_drawn_calls_then_its_workers_let_go_of_everything(
    tmp_path, monkeypatch
):
    # _trim: a speed run's rounds leave gigabytes in its workers; checked beside other judges (on a GPU, outside
    # the lock) it must hold only what the checks read. The calls to check are drawn once and their outputs
    # fetched, then the submission's worker drops everything (a real worker, asked for the drawn call: missing)
    # and the trusted workers are asked to exit; the checks read exactly the fetched calls.
    monkeypatch.setenv("JUDGE_CACHE_DIR", str(tmp_path / "cache"))
    p = find_problem("93")
    run = _speed_run("93", p.reference_path, tmp_path, checks_per_shape=1)
    finish = run._finish
    seen = {}

    def probe(state):
        sub = next(c for c in run.workers.contenders if c.name == "submission")
        (drawn,) = state["picked"][0]
        assert state["fetched"][0][drawn].present
        answer, _ = request(
            sub, {"type": "bench_check", "id": "probe", "shape": 0, "call": drawn}, parse=parsers.parse_bench_outputs
        )
        assert not answer.present
        seen["ended"] = sorted(c.name for c in run.workers.contenders if c.client in run.workers.ended)
        seen["drawn"] = drawn
        return finish(state)

    monkeypatch.setattr(run, "_finish", probe)
    speed = run.run()
    assert seen["ended"] == ["pytorch", "reference"]
    assert speed["shapes"][0]["checked_calls"] == [seen["drawn"]]
    assert "trim_seconds" in speed["phases"]


def test_a_file_that_repairs_its_kept_outputs_when_the_judge_drops_the_others_is_wa(tmp_path, monkeypatch):
    # tests/data/repair_kept_on_trim.py: wrong in every timed call; a finalizer on each output repairs the
    # survivors once the judge's trim drops outputs. The drawn calls' outputs are fetched before any drop.
    monkeypatch.setenv("JUDGE_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(BenchFailed) as failed:
        _bench("93", Path(__file__).parent / "data" / "repair_kept_on_trim.py", tmp_path, torch_baseline=False)
    assert failed.value.verdict == "WA" and "timed call" in failed.value.message


def test_after_the_warm_up_ahead_every_speed_worker_lets_go_of_its_bench_memory(tmp_path, monkeypatch):
    # A warmed-up speed run may wait minutes for the lock behind other judges' (12 softmax jobs on the H200
    # ran out of GPU memory, 2026-12-05): its workers drop their input sets and warm-up outputs once the warm-up
    # ahead and its checks are done (a real worker, asked for a kept warm-up call afterwards: missing), and the
    # run under the lock warms up and times as before.
    monkeypatch.setenv("JUDGE_CACHE_DIR", str(tmp_path / "cache"))
    _check_ahead(monkeypatch)  # the warm-up keeps its calls' outputs for the check ahead
    p = find_problem("93")
    run = _speed_run("93", p.reference_path, tmp_path, torch_baseline=False)
    asked = []

    def spy(c, msg, **kw):
        asked.append((c.name, msg["type"]))
        return request(c, msg, **kw)

    monkeypatch.setattr(speedrun, "request", spy)  # the trim after the warm-up ahead
    run.prewarm()
    run._prewarm.join(120)
    assert run._prewarm_failed is None
    assert sorted(n for n, t in asked if t == "bench_trim") == ["reference", "submission"]
    sub = next(c for c in run.workers.contenders if c.name == "submission")
    answer, _ = request(
        sub, {"type": "bench_check", "id": "probe", "shape": 0, "call": 0}, parse=parsers.parse_bench_outputs
    )
    assert not answer.present
    speed = run.run()
    assert speed["rounds"] >= 1 and speed["shapes"][0]["checked_calls"]


def test_a_spawned_speed_run_is_stopped_as_soon_as_a_group_fails_not_after_the_later_groups(tmp_path, monkeypatch):
    # No speed run can follow a failed group; its workers, warm-up and checks ahead took cores and the GPU beside
    # the later groups (and beside other jobs' cases in `judge grade`) until the session's end.
    monkeypatch.setenv("JUDGE_CACHE_DIR", str(tmp_path / "cache"))
    path = find_problem("93").directory / "submissions" / "wrong_answer" / "ignores_strides.py"
    events = []
    report = _spied_session(monkeypatch, path, events)
    assert report.verdict.value == "WA" and not report.speed["scored"], report.message
    names = [g.name for g in report.groups]
    bad = [g.name for g in report.groups if not g.passed]
    assert bad == ["views"] and names.index("views") < len(names) - 1, bad  # a middle group, later ones run
    kinds = [e[0] if e[0] != "group" else e[1] for e in events]
    # Spawned after the first group; stopped right after the failing one, with the later groups still to run.
    assert kinds[:2] == [names[0], "spawn"], kinds
    assert kinds[kinds.index("views") + 1] == "discard" and kinds[kinds.index("views") + 2 :] == names[3:], kinds
    run, procs = next(e for e in events if e[0] == "discard")[1:]
    assert not run.workers.contenders and all(proc.popen.poll() is not None for proc in procs)


def test_the_judges_cuda_context_is_warmed_in_a_thread_that_never_fails_the_run(monkeypatch):
    # On a GPU the session makes its CUDA context beside the workers' handover (judge.gpu_share.GpuShare.warm):
    # every lane's first golden answer waited for it (1.0-1.5 s). Here, without a GPU, the thread's CUDA call
    # fails, and that failure stays in the thread: the first case would make the context as before.
    from judge.session import Session

    uncaught = []
    monkeypatch.setattr(threading, "excepthook", uncaught.append)  # a traceback on the user's terminal
    session = Session(find_problem("94"), find_problem("94").reference_path, Options(device="cuda", interpret=False))
    thread = session.gpu.warm(session.claim)
    assert thread is not None and thread.name == "judge-cuda-warm"
    thread.join(timeout=60)
    assert not thread.is_alive() and uncaught == []
    interp = Session(find_problem("94"), find_problem("94").reference_path, Options(device="cpu", interpret=True))
    assert interp.gpu.warm(interp.claim) is None


def test_the_cuda_warm_up_waiting_for_another_judges_speed_run_ends_with_the_session(tmp_path, monkeypatch):
    # The warm-up takes the GPU shared, as a case: while another judge times it waits. A session that ends
    # meanwhile (a file that failed to load) must not wait for that speed run: its end cancels the wait.
    from judge.session import Session

    root = Path(__file__).resolve().parents[1]
    monkeypatch.setenv("JUDGE_LOCK_DIR", str(tmp_path))
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time; from judge.timing import lock\n"
            "with lock.gpu_lock(0):\n    print('held', flush=True); time.sleep(120)",
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
    )  # holds it 120 s
    try:
        assert holder.stdout.readline().strip() == "held"
        session = Session(
            find_problem("94"), find_problem("94").reference_path, Options(device="cuda", interpret=False)
        )
        thread = session.gpu.warm(session.claim)
        time.sleep(1.0)
        assert thread.is_alive()  # waiting for the other judge's speed run
        session.gpu._warm_cancel.set()
        thread.join(timeout=30)
        assert not thread.is_alive()  # ended by the cancel, long before the other judge lets go
    finally:
        holder.kill()
        holder.wait()
