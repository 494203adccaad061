"""Statistics of the timing protocol, all on the trusted side.

The unit of evidence is a *round*: the reference and the submission each time
a batch of calls of one shape, back to back on the same GPU. Within a round
both see the same clocks, temperature and neighbours, so the ratio of their
medians is what we trust, and rounds are the independent samples:

    d_r = log(median(reference times in round r) / median(submission times in round r))

The speedup of a shape is exp(mean d_r), with a Student-t interval on the
mean (a log-normal interval on the ratio). The geometric mean over shapes is
estimated the same way from g_r = mean over shapes of clamp(d_{r,s}), so its
interval accounts for rounds in which every shape moved together (clock drift).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# Two-sided 95% quantiles of Student's t, by degrees of freedom (1..30);
# beyond 30 the normal quantile is within 2% of it.
_T975 = [
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
]


def t975(df: int) -> float:
    if df < 1:
        return math.inf
    if df <= len(_T975):
        return _T975[df - 1]
    return 1.960 + 2.4 / df  # close to the exact quantile (2.000 at df=60, 1.980 at df=120)


def median(xs) -> float:
    s = sorted(xs)
    n = len(s)
    if n == 0:
        raise ValueError("median of no samples")
    mid = n // 2
    return s[mid] if n % 2 else 0.5 * (s[mid - 1] + s[mid])


@dataclass(frozen=True)
class Interval:
    """A speedup (ratio > 1: the submission is faster) and its 95% interval."""

    value: float
    low: float
    high: float
    half_width: float  # of the log: 0.01 means about +-1%
    rounds: int

    def as_dict(self) -> dict:
        return {
            "speedup": self.value,
            "ci": [self.low, self.high],
            "ci_half_width_log": self.half_width,
            "rounds": self.rounds,
        }


def mean_interval(logs: list[float]) -> Interval:
    """exp(mean) of log-ratios with a t-interval; one sample gives an infinite interval."""
    n = len(logs)
    if n == 0:
        raise ValueError("no rounds")
    mean = sum(logs) / n
    if n == 1:
        return Interval(math.exp(mean), 0.0, math.inf, math.inf, 1)
    var = sum((x - mean) ** 2 for x in logs) / (n - 1)
    half = t975(n - 1) * math.sqrt(var / n)
    return Interval(math.exp(mean), math.exp(mean - half), math.exp(mean + half), half, n)


def round_log_ratio(ref_times, sub_times) -> float:
    """log(median reference time / median submission time) of one round."""
    return math.log(median(ref_times) / median(sub_times))


def clamp_log(d: float, clamp: float) -> float:
    """Clamp a log-speedup to [1/clamp, clamp] so one shape cannot dominate the geometric mean."""
    bound = math.log(clamp)
    return max(-bound, min(bound, d))


def geomean(xs) -> float:
    xs = list(xs)
    if not xs or any(x <= 0 for x in xs):
        raise ValueError("geometric mean needs positive values")
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def speedups(rounds: list[dict], clamp: float) -> tuple[list[Interval], Interval]:
    """Per-shape intervals and the clamped geometric mean's interval.

    ``rounds[r][s] = (ref_times, sub_times)`` for round r and shape s; every
    round must hold every shape (the protocol times all shapes in each round).
    """
    if not rounds:
        raise ValueError("no rounds")
    shapes = sorted(rounds[0])
    per_shape = {s: [round_log_ratio(*r[s]) for r in rounds] for s in shapes}
    intervals = [mean_interval(per_shape[s]) for s in shapes]
    g = [sum(clamp_log(per_shape[s][i], clamp) for s in shapes) / len(shapes) for i in range(len(rounds))]
    return intervals, mean_interval(g)


@dataclass(frozen=True)
class StopRule:
    ci_target: float = 0.01  # stop when the geometric mean's 95% half-width (of the log) is at most this
    min_rounds: int = 3
    max_rounds: int = 30
    budget_seconds: float = 20.0  # of timed rounds, after warm-up

    def decide(self, rounds: int, half_width: float, elapsed: float, round_seconds: float) -> str | None:
        """None to go on, else why it stops: "ci", "rounds" or "budget"."""
        if rounds >= self.min_rounds and half_width <= self.ci_target:
            return "ci"
        if rounds >= self.max_rounds:
            return "rounds"
        # Stop before a round that would end past the budget (the last round's length predicts the next).
        if rounds >= self.min_rounds and elapsed + round_seconds > self.budget_seconds:
            return "budget"
        return None
