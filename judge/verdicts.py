"""Verdicts, per-group results, the score, and the report as data.

One verdict per submission, chosen by priority (as DMOJ does) among the
failures of its groups: a rule violation outranks a compile error, which
outranks limits, crashes and wrong answers. Score: the points of every group
that passed, except that RJ, CE before any test, and IE score 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

REPORT_VERSION = 1


class Verdict(str, Enum):
    AC = "AC"
    WA = "WA"
    RTE = "RTE"
    TLE = "TLE"
    MLE = "MLE"
    OLE = "OLE"
    CE = "CE"
    RJ = "RJ"
    IE = "IE"

    @property
    def meaning(self) -> str:
        return VERDICTS[self][0]

    @property
    def directory(self) -> str | None:
        """The corpus folder whose submissions must get this verdict (problems/*/submissions/<directory>/)."""
        return VERDICTS[self][1]

    @property
    def scores_zero(self) -> bool:
        """A submission with this verdict scores 0 whatever its groups passed (a rule broken, or no judging)."""
        return self in ZERO_SCORE

    @property
    def stops_later_groups(self) -> bool:
        """After a group ends with this verdict the later (larger) groups are not run."""
        return VERDICTS[self][2]


# Everything about a verdict, in one place: what it means, the corpus folder of
# the submissions that must get it, and whether it ends the run of groups (a
# hang, or running out of memory or output, would recur at full cost in every
# larger group; after a rule violation the score is 0 whatever follows).
VERDICTS = {
    Verdict.AC: ("accepted", "accepted", False),
    Verdict.WA: ("wrong answer", "wrong_answer", False),
    Verdict.RTE: ("run-time error", "runtime_error", False),
    Verdict.TLE: ("time limit exceeded", "time_limit_exceeded", True),
    Verdict.MLE: ("memory limit exceeded", "memory_limit_exceeded", True),
    Verdict.OLE: ("output limit exceeded", "output_limit_exceeded", True),
    Verdict.CE: ("compile error", "compile_error", False),
    Verdict.RJ: ("rejected (rule violation)", "rejected", True),
    Verdict.IE: ("internal error of the judge", None, False),
}
MEANINGS = {v: info[0] for v, info in VERDICTS.items()}
ZERO_SCORE = frozenset({Verdict.RJ, Verdict.IE})

# When groups fail differently, the submission's verdict is the first of these among them.
PRIORITY = [Verdict.IE, Verdict.RJ, Verdict.CE, Verdict.TLE, Verdict.MLE, Verdict.OLE, Verdict.RTE, Verdict.WA]


def worst(verdicts) -> Verdict:
    verdicts = set(verdicts)
    for v in PRIORITY:
        if v in verdicts:
            return v
    return Verdict.AC


@dataclass
class Outcome:
    """What happened to one case."""

    verdict: Verdict
    message: str = ""
    details: dict = field(default_factory=dict)
    # The case that failed, when it is not the one that was asked for: the replay check's fresh inputs
    # (judge.replay), on which the submission's own worker failed too. The report names it.
    case: dict | None = None

    @property
    def passed(self) -> bool:
        return self.verdict is Verdict.AC


@dataclass
class GroupResult:
    name: str
    about: str
    points: float
    passed: bool
    cases_run: int
    verdict: Verdict = Verdict.AC
    case: dict | None = None  # the (shrunk) failing case
    message: str = ""
    details: dict = field(default_factory=dict)
    repro: str = ""
    skipped: str = ""  # why the group did not run, if it did not

    @property
    def earned(self) -> float:
        return self.points if self.passed else 0.0


@dataclass
class Report:
    problem: dict
    submission: dict
    mode: dict
    seed: int
    verdict: Verdict
    message: str
    groups: list[GroupResult]
    notes: list[str]
    max_score: float  # the problem's full score (100); what this run can earn is ``attainable_score``
    speed: dict
    elapsed_seconds: float
    worker: dict = field(default_factory=dict)
    output: str = ""  # what the submission printed (truncated)
    details: dict = field(default_factory=dict)  # e.g. the error, when loading the submission failed
    timing: dict = field(default_factory=dict)  # where the judging time went (worker starts, cases, compiles)

    @property
    def score(self) -> float:
        if self.verdict.scores_zero or not self.groups:
            return 0.0
        return round(sum(g.earned for g in self.groups) + self.speed_points, 2)

    @property
    def speed_points(self) -> float:
        """Speed points count only when every group passed (the speed run is skipped otherwise)."""
        if not self.speed.get("scored") or not all(g.passed for g in self.groups):
            return 0.0
        return float(self.speed.get("points", 0) or 0)

    @property
    def correctness_points(self) -> float:
        return sum(g.points for g in self.groups)

    @property
    def speed_measurable(self) -> bool:
        """Can this run earn speed points? Only a compiled run on a GPU that measures speed: not the
        interpreter, not a quick test; an AC whose speed went unmeasured was told not to measure it
        (--no-speed, --group/--case). A wrong answer on a GPU could have earned them."""
        if float(self.speed.get("max_points", 0) or 0) <= 0:
            return False
        if self.speed.get("scored"):
            return True
        if self.mode.get("interpret") or self.mode.get("device") != "cuda" or self.mode.get("quick"):
            return False
        return self.verdict is not Verdict.AC

    @property
    def attainable_score(self) -> float:
        """The most this run can earn: the groups' points, plus the speed points where speed is measured."""
        if not self.groups:
            return self.max_score
        speed = float(self.speed.get("max_points", 0) or 0) if self.speed_measurable else 0.0
        return round(self.correctness_points + speed, 2)

    @property
    def max_score_note(self) -> str:
        """Why the attainable maximum is below the problem's full score ("" when it is not)."""
        if not self.groups or self.attainable_score >= self.max_score:
            return ""
        speed = float(self.speed.get("max_points", 0) or 0)
        if speed and not self.speed_measurable:
            if self.mode.get("interpret") or self.mode.get("device") != "cuda":
                why = "speed is not measured in interpreter mode (submit on a GPU to earn them)"
            elif self.mode.get("quick"):
                why = "a quick test does not measure speed (submit does)"
            else:
                why = "this run did not measure speed"
            return f"the {speed:g} speed points are not part of this run: {why}"
        return "only some of the test groups ran"

    def to_json(self) -> dict:
        return {
            "version": REPORT_VERSION,
            "verdict": self.verdict.value,
            "verdict_meaning": self.verdict.meaning,
            "score": self.score,
            "max_score": self.attainable_score,
            "full_score": self.max_score,
            "max_score_note": self.max_score_note or None,
            "message": self.message,
            "details": self.details,
            "problem": self.problem,
            "submission": self.submission,
            "mode": self.mode,
            "seed": self.seed,
            "groups": [
                {
                    "name": g.name,
                    "about": g.about,
                    "points": g.points,
                    "earned": g.earned,
                    "passed": g.passed,
                    "verdict": g.verdict.value,
                    "cases_run": g.cases_run,
                    "skipped": g.skipped or None,
                    "failure": None
                    if g.passed
                    else {
                        "case": g.case,
                        "message": g.message,
                        "details": g.details,
                        "reproduce": g.repro,
                    },
                }
                for g in self.groups
            ],
            "speed": self.speed,
            "timing": self.timing,
            "notes": self.notes,
            "worker": self.worker,
            "output": self.output,
            "elapsed_seconds": round(self.elapsed_seconds, 3),
        }
