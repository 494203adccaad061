"""The timing statistics' and the speed score's promises (judge.timing.stats, judge.timing.score).

- A round's ratio is the ratio of the medians: one sample a host hiccup slowed (or a clock that ran fast once)
  does not move it, however far off it is.
- Each shape's speedup is clamped to [1/clamp, clamp] before the geometric mean: one shape cannot carry it.
- Speed points: 0 at or below speed_zero_at, all of them at speed_full_at or faster (no more), linear in log2
  between; none without correctness.
"""

import math

import pytest

from judge.timing import stats
from judge.timing.score import SpeedScore

REF = [2.0, 2.1, 1.9, 2.0, 2.05]  # the reference: about 2.0 per call
SUB = [1.0, 1.05, 0.95, 1.0, 1.02]  # the submission: about twice as fast


@pytest.mark.parametrize("outlier", [100.0, 1e-6], ids=["slow", "fast"])
def test_one_outlier_sample_does_not_move_a_rounds_ratio(outlier):
    clean = stats.round_log_ratio(REF, SUB)
    assert clean == pytest.approx(math.log(2.0 / 1.0))
    # The submission's samples with one of them replaced by an outlier, in any place.
    for i in range(len(SUB)):
        noisy = SUB[:i] + [outlier] + SUB[i + 1 :]
        assert stats.round_log_ratio(REF, noisy) == pytest.approx(math.log(2.0 / 1.0), abs=0.03)
        assert stats.round_log_ratio(noisy, REF) == pytest.approx(math.log(1.0 / 2.0), abs=0.03)


def test_one_outlier_sample_does_not_move_a_shapes_speedup():
    rounds = [{"s": (REF, SUB)} for _ in range(5)]
    noisy = [{"s": (REF, SUB if r != 2 else SUB[:4] + [250.0])} for r in range(5)]
    (clean,), _ = stats.speedups(rounds, clamp=8.0)
    (moved,), gm = stats.speedups(noisy, clamp=8.0)
    assert clean.value == pytest.approx(2.0, rel=1e-9)
    assert moved.value == pytest.approx(clean.value, rel=0.02)
    assert gm.value == pytest.approx(2.0, rel=0.02)


def test_the_median_of_an_even_count_is_the_middle_twos_mean():
    assert stats.median([1.0, 2.0, 3.0, 100.0]) == 2.5
    assert stats.median([5.0]) == 5.0
    assert stats.median([7.0, 1.0]) == 4.0
    with pytest.raises(ValueError, match="^median of no samples$"):
        stats.median([])


def test_a_shape_far_faster_than_the_reference_counts_as_the_clamp_in_the_geometric_mean():
    # Shape "a": 1000x faster, shape "b": 2x slower; clamp 8: the mean is of log 8 and log 0.5.
    rounds = [{"a": ([1000.0], [1.0]), "b": ([1.0], [2.0])} for _ in range(3)]
    shapes, gm = stats.speedups(rounds, clamp=8.0)
    assert [s.value for s in shapes] == pytest.approx([1000.0, 0.5])  # per shape: not clamped
    assert gm.value == pytest.approx(math.sqrt(8.0 * 0.5))
    # And the other way: a shape 1000x slower counts as 1/8.
    slow = [{"a": ([1.0], [1000.0]), "b": ([2.0], [1.0])} for _ in range(3)]
    assert stats.speedups(slow, clamp=8.0)[1].value == pytest.approx(math.sqrt(2.0 / 8.0))
    # Within the clamp, nothing changes.
    assert stats.clamp_log(math.log(7.9), 8.0) == pytest.approx(math.log(7.9))
    assert stats.clamp_log(math.log(1 / 7.9), 8.0) == pytest.approx(math.log(1 / 7.9))


def test_rounds_where_every_shape_moved_together_widen_the_geometric_means_interval():
    # Two shapes whose ratio drifts with the round (clock drift): the geomean's interval sees the drift.
    rounds = [{"a": ([2.0 * f], [1.0]), "b": ([4.0 * f], [1.0])} for f in (0.9, 1.0, 1.1, 1.0)]
    _, gm = stats.speedups(rounds, clamp=8.0)
    steady = [{"a": ([2.0], [1.0]), "b": ([4.0], [1.0])} for _ in range(4)]
    _, flat = stats.speedups(steady, clamp=8.0)
    assert flat.half_width == pytest.approx(0.0, abs=1e-12) and gm.half_width > 0.05
    assert gm.rounds == 4 and gm.low < gm.value < gm.high


def test_an_interval_from_logs_is_a_t_interval_around_their_mean():
    logs = [0.0, 0.1, 0.2, 0.3, 0.4]
    iv = stats.mean_interval(logs)
    sd = math.sqrt(sum((x - 0.2) ** 2 for x in logs) / 4)
    assert iv.value == pytest.approx(math.exp(0.2))
    assert iv.half_width == pytest.approx(2.776 * sd / math.sqrt(5))
    assert iv.as_dict() == {
        "speedup": iv.value,
        "ci": [iv.low, iv.high],
        "ci_half_width_log": iv.half_width,
        "rounds": 5,
    }
    one = stats.mean_interval([0.5])
    assert (one.low, one.high, one.rounds) == (0.0, math.inf, 1) and one.value == pytest.approx(math.exp(0.5))
    with pytest.raises(ValueError, match="^no rounds$"):
        stats.mean_interval([])
    with pytest.raises(ValueError, match="^no rounds$"):
        stats.speedups([], clamp=8.0)


def test_t_quantiles_at_the_tables_edges():
    assert stats.t975(0) == math.inf
    assert stats.t975(30) == pytest.approx(2.042)
    assert stats.t975(31) == pytest.approx(1.960 + 2.4 / 31)
    assert stats.t975(2) == pytest.approx(4.303)


def test_the_stop_rule_needs_its_minimum_rounds_before_the_budget_or_the_interval_stops_it():
    rule = stats.StopRule(ci_target=0.01, min_rounds=3, max_rounds=6, budget_seconds=10.0)
    assert rule.decide(2, 0.0, 100.0, 5.0) is None  # over the budget, but too few rounds
    assert rule.decide(3, 0.01, 0.0, 0.0) == "ci"  # the target itself is narrow enough
    assert rule.decide(3, 0.0100001, 0.0, 0.0) is None
    assert rule.decide(3, 0.5, 5.0, 5.0) is None  # the next round ends at the budget, not past it
    assert rule.decide(3, 0.5, 5.0, 5.1) == "budget"
    assert rule.decide(6, 0.5, 0.0, 0.0) == "rounds"
    assert rule.decide(5, 0.5, 0.0, 0.0) is None


def test_geomean_of_positive_values_only():
    assert stats.geomean([1.0, 4.0, 16.0]) == pytest.approx(4.0)
    assert stats.geomean(iter([9.0])) == pytest.approx(9.0)
    for bad in ([], [1.0, -1.0], [0.0]):
        with pytest.raises(ValueError, match="^geometric mean needs positive values$"):
            stats.geomean(bad)


# ---------------------------------------------------------------------- speed points

DEFAULT = SpeedScore(max_points=30, zero_at=0.5, full_at=1.0, clamp=8)


@pytest.mark.parametrize(
    "speedup,points",
    [
        (0.0, 0),
        (0.25, 0),
        (0.5, 0),  # twice as slow or slower: nothing
        (0.6, 7.89),
        (math.sqrt(0.5), 15.0),
        (0.8, 20.34),
        (0.9, 25.44),
        (0.99, 29.57),  # 30 * log2(s / 0.5)
        (1.0, 30),
        (1.5, 30),
        (100.0, 30),  # as fast as the reference or faster: all, and no more
    ],
)
def test_speed_points_by_hand(speedup, points):
    assert DEFAULT.points(speedup) == pytest.approx(points, abs=0.006)


@pytest.mark.parametrize("speedup", [-1.0, float("nan"), float("inf"), float("-inf")])
def test_a_speedup_that_is_not_a_positive_finite_number_earns_nothing(speedup):
    assert DEFAULT.points(speedup) == 0


def test_no_speed_points_without_correctness():
    assert DEFAULT.points(1.5, eligible=False) == 0
    assert DEFAULT.points(0.8, eligible=False) == 0


def test_equal_steps_in_log2_are_equal_steps_in_points():
    assert DEFAULT.points(0.72) - DEFAULT.points(0.6) == pytest.approx(
        DEFAULT.points(0.96) - DEFAULT.points(0.8), abs=0.02
    )


def test_a_problems_own_constants_shape_the_curve():
    s = SpeedScore.from_spec({"speed_zero_at": 0.25, "speed_full_at": 2.0, "speedup_clamp": 4}, 40)
    assert (s.max_points, s.zero_at, s.full_at, s.clamp) == (40.0, 0.25, 2.0, 4.0)
    assert s.points(0.25) == 0 and s.points(2.0) == 40 and s.points(4.0) == 40
    assert s.points(0.5) == pytest.approx(40 / 3, abs=0.01)  # one of three doublings
    assert SpeedScore.from_spec({}, 30) == DEFAULT  # the defaults


@pytest.mark.parametrize(
    "spec",
    [
        {"speed_zero_at": 1.0, "speed_full_at": 0.5},
        {"speed_zero_at": 1.0, "speed_full_at": 1.0},
        {"speed_zero_at": 0.0, "speed_full_at": 1.0},
        {"speed_zero_at": -0.5, "speed_full_at": 1.0},
        {"speedup_clamp": 0.5},
    ],
)
def test_constants_that_make_no_curve_are_refused(spec):
    words = r"^\[score\] needs 0 < speed_zero_at < speed_full_at and speedup_clamp >= 1$"
    with pytest.raises(ValueError, match=words):
        SpeedScore.from_spec(spec, 30)


def test_a_clamp_of_one_is_allowed():
    assert SpeedScore.from_spec({"speedup_clamp": 1}, 30).clamp == 1


def test_the_speed_section_reports_the_points_for_the_speedup():
    result = {"geomean_speedup": math.sqrt(0.5), "shapes": [{}, {}, {}]}
    section = DEFAULT.section(result)
    assert section["scored"] is True and section["points"] == pytest.approx(15.0)
    assert section["max_points"] == 30 and section["speedup"] == result["geomean_speedup"]
    assert section["geomean_speedup"] == result["geomean_speedup"]
    assert "0.707x" in section["reason"] and "3 shapes" in section["reason"] and "15 of 30" in section["reason"]
    assert "0.5x" in DEFAULT.describe() and "[1/8, 8]" in DEFAULT.describe()


def _t_cdf(x: float, df: int) -> float:
    """Student's t distribution function, by Simpson's rule over its density (independent of the judge's table)."""
    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)
    n = 4000
    h = x / n
    f = [c * (1 + (i * h) ** 2 / df) ** (-(df + 1) / 2) for i in range(n + 1)]
    return 0.5 + h / 3 * (f[0] + f[-1] + 4 * sum(f[1:-1:2]) + 2 * sum(f[2:-1:2]))


@pytest.mark.parametrize("df", list(range(1, 31)) + [31, 40, 60, 120, 500])
def test_t975_is_students_two_sided_95_percent_quantile(df):
    assert _t_cdf(stats.t975(df), df) == pytest.approx(0.975, abs=2e-4 if df <= 30 else 1e-3)


def test_at_full_speed_the_points_are_exactly_the_maximum():
    s = SpeedScore(max_points=10.125, zero_at=0.5, full_at=1.0)
    assert s.points(1.0) == 10.125 and s.points(1.5) == 10.125
    assert s.points(0.5) == 0 and s.points(0.0) == 0
