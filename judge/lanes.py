"""The lanes: one thread per worker, each taking the earliest case no lane has taken yet.

A group's cases are known before Hypothesis runs it (judge.groups.draw_cases: the same seed draws the same
cases while they pass), so the lanes run them ahead, in parallel, and Hypothesis then finds their outcomes
in the session's cache. Lanes that stopped at each group's end would leave every worker waiting for the
group's slowest case (often one that compiles a new kernel variant), then for Hypothesis to go over the
group in the judge's one thread, then for the next group's cases to be drawn: at 98's seven groups, a
large part of the workers' time (docs/measurements: submit latency on a GPU).

Here a lane that finds nothing left to take in the group being judged takes the next group's first case
instead (its cases are drawn while the lanes work), as long as no case of the groups before it has failed:
a failure may stop the later groups (judge.verdicts: stops_later_groups), and shrinking it needs the first
worker, so the lanes pause rather than compete with it. What they ran ahead for a group that is then not
run is dropped; the verdicts are the ones the groups would have had one after another, since every case's
outcome depends on the case alone (that is what the corpus's `same verdicts with one worker` check holds
the judge to).

One case is taken out of its turn (:meth:`Lanes.early`): the last group's first case, by the first lane but
the first worker's to ask, as soon as its plan is drawn. Every problem's last group is its largest inputs
(`large`), and its first case is refilled (the same memory, new values: judge.session) on the same worker, so
that case and its refill are the longest chain of the tests: run when every other lane has finished, they keep
the others idle for seconds (docs/measurements: submit latency on a GPU). Taken first, it runs beside the
first group's cases. It follows the rules of a case run ahead (dropped when its group is not judged; not taken
once an earlier case has failed); never on the first worker, which shrinking needs.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass


@dataclass
class Plan:
    """One group's cases as the lanes see them."""

    index: int  # the group's place among the selected groups
    group: object  # judge.problems.Group
    cases: list
    next: int = 0  # the next case to hand out
    failed_at: int | None = None  # the first failing case's index
    frozen: bool = False  # a worker died or the run's time ran out: hand out no more
    running: int = 0  # cases handed out and not back yet
    uncounted: int = 0  # cases done before the group began (counted for the progress when it does)

    def handed_out(self) -> bool:
        """Nothing more of this group to hand out."""
        return (
            self.frozen or self.next >= len(self.cases) or (self.failed_at is not None and self.next > self.failed_at)
        )

    def failed(self) -> bool:
        return self.frozen or self.failed_at is not None


class Lanes:
    """The lane threads of one session's test groups.

    ``run(plan, i, ex)`` runs case ``i`` of ``plan`` on worker ``ex`` and returns its Outcome (the session
    caches it); ``started(ex)`` waits for worker ``ex`` to be up (False: it could not start, so its lane
    ends); ``counted()`` is told each case whose group is the one being judged (the progress line)."""

    def __init__(self, workers: list, run, started, counted):
        self._run = run
        self._started = started
        self._counted = counted
        self._cond = threading.Condition()
        self._plans: list[Plan] = []
        self._current = 0  # the plan being judged
        self._closing = False
        self._error: BaseException | None = None
        self.ran_ahead = 0  # cases taken from a group after the one being judged
        self._early: int | None = None  # a plan whose first case goes ahead of its turn (early)
        self._running: dict[int, tuple[object, int]] = {}  # id(worker) -> (worker, the plan of its case now)
        self._first_worker = workers[0] if workers else None
        self._threads = [
            threading.Thread(target=self._lane, args=(ex,), name=f"judge-lane{i}", daemon=True)
            for i, ex in enumerate(workers)
        ]
        for t in self._threads:
            t.start()

    # ------------------------------------------------------------------ the judge's thread

    def add(self, plan: Plan) -> None:
        """A group's cases, drawn: the lanes take them once the earlier groups' are handed out."""
        with self._cond:
            assert plan.index == len(self._plans), "plans are added in the groups' order"
            self._plans.append(plan)
            self._cond.notify_all()

    def begin(self, index: int) -> Plan:
        """The judge now judges plan ``index`` (its earlier ones are done): the cases ahead count from now."""
        with self._cond:
            self._current = index
            plan = self._plans[index]
            for _ in range(plan.uncounted):
                self._counted()
            plan.uncounted = 0
            self._cond.notify_all()
            return plan

    def early(self, index: int) -> None:
        """Plan ``index``'s first case goes, ahead of its turn, to the first lane but the first worker's that
        asks for a case, while no case of the plans before it has failed (see the module's docstring)."""
        with self._cond:
            self._early = index
            self._cond.notify_all()

    def wait(self, index: int) -> None:
        """Until plan ``index`` has nothing left to hand out and none of its cases is running."""
        with self._cond:
            plan = self._plans[index]
            while not (plan.handed_out() and plan.running == 0) and self._error is None:
                self._cond.wait()
            if self._error is not None:
                raise self._error

    def running_ahead(self) -> list:
        """The workers running a case of a group after the one being judged now (run ahead, or early)."""
        with self._cond:
            return [ex for ex, index in self._running.values() if index > self._current]

    def close(self) -> None:
        """No more cases: each lane ends after the case it runs (one of a group that will not be judged, at
        worst: cases ahead are taken only while every earlier case passed; the session stops the workers of
        those first, :meth:`running_ahead`)."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        for t in self._threads:
            t.join()

    # ------------------------------------------------------------------ the lanes

    def _take(self, first: bool = False) -> tuple[Plan, int] | None:
        """The earliest case not handed out: in the plan being judged, else (run ahead) in a later one whose
        earlier plans have all their cases handed out with no failure among those that came back. Before
        them, for a lane but the first worker's, the early plan's first case (:meth:`early`)."""
        if self._early is not None and not first:
            got = self._take_early()
            if got is not None:
                return got
        for plan in self._plans[self._current :]:
            if not plan.handed_out():
                i = plan.next
                plan.next += 1
                plan.running += 1
                self.ran_ahead += plan.index != self._current
                return plan, i
            if plan.failed():
                return None
        return None

    def _take_early(self) -> tuple[Plan, int] | None:
        index = self._early
        if index >= len(self._plans):
            return None  # not drawn yet
        plan = self._plans[index]
        if (
            index <= self._current
            or plan.next != 0
            or plan.handed_out()
            or any(p.failed() for p in self._plans[:index])
        ):
            self._early = None  # its turn has come, or a failure may stop it: nothing to take ahead
            return None
        self._early = None
        plan.next = 1
        plan.running += 1
        self.ran_ahead += 1
        return plan, 0

    def _lane(self, ex) -> None:
        if not self._started(ex):
            return
        first = ex is self._first_worker
        while True:
            with self._cond:
                got = None
                while not self._closing and (got := self._take(first)) is None:
                    self._cond.wait()
                if got is None:
                    return
                plan, i = got
                self._running[id(ex)] = (ex, plan.index)
            outcome = None
            try:
                outcome = self._run(plan, i, ex)
            except BaseException as exc:  # noqa: BLE001 - the judge's own bug: raised in its thread (wait)
                with self._cond:
                    self._error = self._error or exc
            finally:
                with self._cond:
                    self._running.pop(id(ex), None)
                    plan.running -= 1
                    if outcome is not None:
                        if not outcome.passed and (plan.failed_at is None or i < plan.failed_at):
                            plan.failed_at = i
                        if outcome.freezes:
                            plan.frozen = True
                        if outcome.counted:
                            if plan.index == self._current:
                                self._counted()
                            else:
                                plan.uncounted += 1
                    self._cond.notify_all()
            if self._error is not None:
                return


@dataclass(frozen=True)
class LaneOutcome:
    """What a lane needs of a case's outcome."""

    passed: bool
    freezes: bool  # a worker died or the run's time ran out: the group's other cases are not run
    counted: bool  # the case ran (it was not in the cache already): one more for the progress line
