"""From the geometric-mean speedup over the reference to speed points.

    points = 0                                   if speedup <= zero_at
           = max * log2(speedup / zero_at)
                 / log2(full_at / zero_at)       in between (linear in log2)
           = max                                 if speedup >= full_at

A submission twice as slow as the reference earns nothing with the defaults
(zero_at 0.5), one as fast earns everything (full_at 1.0), and being faster
earns no more (the cap). Equal steps in log2 are equal steps in points: going
from 0.6x to 0.72x is worth as much as from 0.8x to 0.96x. Each problem's
problem.toml [score] may change the constants. No speed points without
correctness: the caller passes ``eligible`` only when every group passed and
the speed run itself found nothing wrong.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class SpeedScore:
    max_points: float = 30.0
    zero_at: float = 0.5
    full_at: float = 1.0
    clamp: float = 8.0  # per-shape speedups are clamped to [1/clamp, clamp] before the geometric mean

    @classmethod
    def from_spec(cls, score: dict, max_points: float) -> SpeedScore:
        s = cls(
            max_points=float(max_points),
            zero_at=float(score.get("speed_zero_at", 0.5)),
            full_at=float(score.get("speed_full_at", 1.0)),
            clamp=float(score.get("speedup_clamp", 8.0)),
        )
        if not (0 < s.zero_at < s.full_at) or s.clamp < 1:
            raise ValueError("[score] needs 0 < speed_zero_at < speed_full_at and speedup_clamp >= 1")
        return s

    def points(self, speedup: float, eligible: bool = True) -> float:
        if not eligible or not speedup > 0 or not math.isfinite(speedup):
            return 0.0
        if speedup <= self.zero_at:
            return 0.0
        if speedup >= self.full_at:
            return self.max_points
        frac = math.log2(speedup / self.zero_at) / math.log2(self.full_at / self.zero_at)
        return round(self.max_points * frac, 2)

    def section(self, result: dict) -> dict:
        """The report's ``speed`` part for a finished speed run (RESULT from the timing protocol).
        ``speedup`` is the stable key course tools read (rubric curves, CSV, leaderboards)."""
        speedup = result["geomean_speedup"]
        points = self.points(speedup, eligible=True)
        return {
            **result,
            "scored": True,
            "points": points,
            "max_points": self.max_points,
            "speedup": speedup,
            "reason": f"{speedup:.3f}x the reference's speed (geometric mean over {len(result['shapes'])} "
            f"shapes): {points:g} of {self.max_points:g} points",
        }

    def describe(self) -> str:
        return (
            f"0 points at or below {self.zero_at:g}x the reference's speed, {self.max_points:g} at "
            f"{self.full_at:g}x or faster, linear in log2 between; per-shape speedups clamped to "
            f"[1/{self.clamp:g}, {self.clamp:g}] before the geometric mean"
        )
