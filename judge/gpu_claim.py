"""One judging's claim on its GPU through the host's admission (judge.gpu_admission), phase by phase.

A session (judge.session) claims, before it starts anything on the GPU, its own process's share, its replay
workers' and as many test workers as fit (at least one, at most what it would start alone); while its tests
run, its speed run's workers may start ahead only if they fit at once; once its tests are over it holds its
speed run's workers instead, and the speed run's timed extra is the ledger's shared timed region. Every figure
is a cap the judge enforces (judge.gpu_budget). Without a GPU, or in the interpreter, it claims nothing.
"""

from __future__ import annotations

from judge import gpu_budget
from judge.gpu_admission import Admission, Refused, waiting_words

__all__ = ["GpuClaim", "Refused", "drop_handed", "hand_over", "handed_over"]


class GpuClaim:
    """``speed``: whether a speed run may follow the tests (its timed extra is then declared from the start, so
    that moving to it never waits); ``speed_replays``: its replay workers; ``baseline``: PyTorch's timed worker
    too. ``admission``: the GPU's ledger (tests give one with a capacity of their own)."""

    def __init__(
        self,
        options,
        limits,
        *,
        speed: bool,
        speed_replays: int,
        baseline: bool = False,
        progress=None,
        admission: Admission | None = None,
    ):
        self.on = options.device == "cuda" and not options.interpret
        self.limits = limits
        self.progress = progress
        self.process = gpu_budget.process_bytes(limits)
        self.judge = self.process  # the judge's own process: its CUDA context and its capped work
        base, extra = gpu_budget.speed_bytes(limits, replays=speed_replays, baseline=baseline)
        self.speed = (self.judge + base, extra) if speed else None
        self.admission = admission or (Admission(options.gpu or 0) if self.on else None)
        self.reservation = None
        self.given = 0  # test workers given room (start)
        self.gpu = options.gpu or 0
        self.ahead = False  # the speed run's workers are in the reservation beside the tests' (speed_ahead)

    @property
    def waited_seconds(self) -> float:
        return self.reservation.waited_seconds if self.reservation is not None else 0.0

    def _waiting(self, ahead: int, why: str) -> None:
        if self.progress is not None:
            self.progress.stage(waiting_words(ahead, why))

    def _timed_for(self, held: int) -> int:
        """The timed region this claim needs while it holds ``held`` bytes: what its speed run will hold (its
        workers and their timed extra) beyond that."""
        if self.speed is None:
            return 0
        return max(0, self.speed[0] + self.speed[1] - held)

    def start(self, workers: int, replays: int, block: bool = True) -> int:
        """Claim the tests' memory, waiting for it; how many of ``workers`` test workers were given room (all of
        them off the GPU). ``block=False``: 0 unless it fits now. Raises Refused when even one can never fit.
        A claim started already (handed over by a head start, judge.pool) keeps what it was given."""
        if not self.on:
            return workers
        if self.reservation is not None:
            return self.given
        others = sum(1 for e in self.admission.snapshot() if e.held)
        # A judge beside others asks for its share of the host's workers: memory alone would let the first of
        # several students' submits take a whole host's worth of compiling workers.
        workers = max(1, workers // (1 + others))
        least = self.judge + (replays + 1) * self.process
        want = least + (workers - 1) * self.process
        self.reservation = self.admission.reserve(
            want,
            least=least,
            unit=self.process,
            timed=self._timed_for(least),
            what="tests",
            on_wait=self._waiting,
            block=block,
        )
        if self.reservation is None:
            return 0
        self.given = int(1 + (self.reservation.bytes - least) // self.process)
        self.reservation.resize(self.reservation.bytes, timed=self._timed_for(self.reservation.bytes))
        return self.given

    def speed_ahead(self) -> bool:
        """Whether the speed run's workers may start now, beside the tests' (only if they fit at once)."""
        if not self.on or self.speed is None or self.ahead:
            return self.ahead or not self.on
        held = self.reservation.bytes
        self.ahead = self.reservation.resize(held + self.speed[0] - self.judge, block=False)
        return self.ahead

    def drop_ahead(self) -> None:
        """The speed run started ahead was dropped (a later group failed): its workers' memory goes back."""
        if self.on and self.ahead and self.speed is not None:
            self.reservation.resize(self.reservation.bytes - (self.speed[0] - self.judge))
            self.ahead = False

    def to_speed(self, run) -> None:
        """The tests' workers have stopped: hold the speed run's (waiting for them if they were not ahead, before
        any new judge), with its timed extra, and tell ``run`` (judge.timing.speedrun.SpeedRun) the reservation,
        whose timed region it says it uses while it holds the GPU's lock."""
        if not self.on or self.speed is None:
            return
        if self.reservation is None:  # a speed run alone (judge bench)
            self.reservation = self.admission.reserve(
                self.speed[0], timed=self.speed[1], what="speed run", on_wait=self._waiting
            )
        else:
            self.reservation.resize(self.speed[0], timed=self.speed[1], on_wait=self._waiting)
        self.ahead = True
        run.reservation = self.reservation

    def release(self) -> None:
        if self.reservation is not None:
            self.reservation.release()


_handed: dict[int, GpuClaim] = {}  # GPU -> a claim a head start made (judge.pool), for this process's session


def hand_over(claim: GpuClaim) -> None:
    """Keep a started claim for the session this process runs next on its GPU (judge.pool.head_start reserves
    its workers' memory before it starts them: their CUDA contexts are no one else's to count)."""
    _handed[claim.gpu] = claim


def handed_over(options) -> GpuClaim | None:
    """The claim a head start made for this GPU, taken (None: none)."""
    if options.device != "cuda" or options.interpret:
        return None
    return _handed.pop(options.gpu or 0, None)


def drop_handed() -> None:
    """Release a head start's claim that no session took."""
    while _handed:
        _handed.popitem()[1].release()
