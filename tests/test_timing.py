"""The timing protocol's CPU-testable parts: statistics, score, floor, clocks, lock, input generation,
and the bench messages through real workers in interpreter mode (perf_counter times there: a test of
the protocol, never a speed claim). No test asserts a wall time."""

import math
import random
import subprocess
import sys
import textwrap
import time

import pytest
import torch

from judge.problems import find_problem
from judge.timing import checks, stats
from judge.timing.lock import gpu_lock
from judge.timing.speedrun import NOT_A_CLAIM, BenchConfig, SpeedRun, BenchFailed
from judge.timing.score import SpeedScore
from judge.shared import bench_inputs

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
        return Report(problem={}, submission={}, mode={}, seed=0, verdict=groups[0].verdict, message="",
                      groups=groups, notes=[], max_score=100, speed={"scored": True, "points": 21.5},
                      elapsed_seconds=0)

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
    values = dict(event_total=0.010, host_total=0.012, worker_wall=0.050, judge_wall=0.052,
                  event_median=1.0e-3, host_median=1.1e-3)
    values.update(kw)
    return checks.clock_problems(**values)


def test_honest_clocks_pass():
    assert honest() == []
    assert honest(event_median=None, host_median=None) == []


@pytest.mark.parametrize("forged, words", [
    ({"event_total": 0.2}, "more than"),  # times longer than the whole request
    ({"host_total": 0.2}, "host times"),
    ({"worker_wall": 0.5}, "the judge saw"),
    ({"worker_wall": 0.001}, "slowed clock"),  # the worker's clock ran slow
    ({"event_median": 1e-5}, "forged timer"),  # elapsed_time reporting 1/100 of the truth
])
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


def test_lock_second_judge_waits_until_the_first_releases(tmp_path, monkeypatch, repo_root):
    monkeypatch.setenv("JUDGE_LOCK_DIR", str(tmp_path))
    held, release = tmp_path / "held", tmp_path / "release"
    child = subprocess.Popen([sys.executable, "-c", HOLDER, str(repo_root), str(held), str(release)],
                             env={**__import__("os").environ, "JUDGE_LOCK_DIR": str(tmp_path)})
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

    for p in all_problems():
        bench = p.spec["bench"]
        assert bench["shapes"] and bench["interpret_shapes"], p.id
        for params in bench["shapes"] + bench["interpret_shapes"]:
            nbytes, flops = p.golden.work(dict(params))
            assert nbytes > 0 and flops >= 0
            assert len(p.golden.bench_args(dict(params))) == p.arity
        assert callable(p.golden.pytorch)


# ---------------------------------------------------------------------- through real workers

CHEAT = textwrap.dedent('''
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
''')


def _bench(problem_id, path, tmp_path, **config):
    from judge.sandbox import Limits
    from judge.sandbox.process import ProcessBackend

    p = find_problem(problem_id)
    cfg = BenchConfig(shapes=[dict(p.spec["bench"]["interpret_shapes"][0])],
                      stop=stats.StopRule(ci_target=0.01, min_rounds=2, max_rounds=2, budget_seconds=60),
                      **config)
    limits = Limits(case_seconds=120, run_seconds=600, memory_mb=4096, output_bytes=1 << 20, processes=256,
                    startup_seconds=120)
    return SpeedRun(p, path, device="cpu", interpret=True, gpu=None, backend=ProcessBackend(), limits=limits,
                 scratch=tmp_path, config=cfg).run()


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


def test_a_submission_wrong_only_when_timed_is_caught_by_the_output_check(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGE_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "cheat.py"
    path.write_text(CHEAT)
    with pytest.raises(BenchFailed) as exc:
        _bench("93", path, tmp_path, torch_baseline=False)
    assert exc.value.verdict == "WA" and "timed call" in exc.value.message


def test_submit_in_interpreter_mode_says_speed_is_not_scored(tmp_path):
    from judge.options import Options
    from judge.session import Session

    p = find_problem("93")
    options = Options(device="cpu", interpret=True, sandbox="process", seed=3, group="small-ragged", max_examples=1)
    report = Session(p, p.reference_path, options).run()
    assert report.verdict.value == "AC"
    assert report.speed["scored"] is False and "interpreter mode" in report.speed["reason"]
    assert report.speed_points == 0 and report.score == 20
    assert report.timing["worker_starts"] == 1 and report.timing["cases"] >= 1


def test_speed_table_shows_rates_roofline_and_flags_spills():
    import io

    from rich.console import Console

    from judge.timing.render import plot, render_speed

    row = {"params": {"M": 4096, "N": 4096, "K": 4096, "dtype": "float16"}, "mode": "events", "time_s": 2.3e-4,
           "speedup": 0.95, "ci": [0.94, 0.96], "vs_pytorch": 0.9, "reference_vs_pytorch": 0.95,
           "gbps": None, "tflops": 597.6, "roofline_pct": 89.0}
    speed = {"shapes": [row], "geomean_speedup": 0.95, "ci": [0.94, 0.96], "rounds": 7, "stopped": "ci",
             "timing_mode": "cuda",
             "kernels": [{"name": "matmul_kernel", "registers": 255, "spills": 12, "shared_bytes": 98304,
                          "num_warps": 8, "num_stages": 4}],
             "ceilings": {"key": {"name": "NVIDIA H200"}, "copy_bytes_per_s": 4.27e12,
                          "matmul_flops_per_s": {"float16": 6.71e14}}, "notes": []}
    buf = io.StringIO()
    render_speed(speed, Console(file=buf, width=200))
    text = buf.getvalue()
    for want in ("597.6", "89.0%", "0.950x [0.940, 0.960]", "255 registers", "spills!", "4,270 GB/s", "7 rounds"):
        assert want in text, want
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "matplotlib is not installed" in plot(speed, "/nonexistent/x.png")


def test_work_left_on_another_stream_is_counted():
    # Two calls of 100 us on their own stream; the second left 400 us of work
    # on another stream, seen only by the end recorded after a device-wide sync.
    import dataclasses

    from judge.replies import BenchResult
    from judge.timing.speedrun import _net_times, late_work_calls

    reply = BenchResult(mode="events", times=(100e-6, 100e-6), device_times=(115e-6, 515e-6),
                        sync_gaps=(14e-6, 15e-6, 16e-6), overhead=(0.0,))
    net = _net_times(reply)
    assert net[0] == pytest.approx(100e-6)
    assert net[1] == pytest.approx(500e-6)
    assert late_work_calls(reply) == 1
    honest = dataclasses.replace(reply, device_times=(115e-6, 116e-6))
    assert late_work_calls(honest) == 0 and _net_times(honest) == pytest.approx([100e-6, 100e-6])
