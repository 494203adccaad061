"""The groups of one judging run (judge.session), in turn: each group's cases drawn (judge.groups, with
Hypothesis) and run, on the lanes ahead where there are several workers (judge.lanes); its replays settled
(judge.session_replays); its result, or "not run" after a group whose verdict stops the later ones.

The cases themselves run through the session (Session.run_case, Session.lane_case), which keeps the case cache
and the state the group's run sets: frozen after a worker death, shrinking once a failure was found.
"""

from __future__ import annotations

import json
import shlex
import time
from dataclasses import dataclass
from pathlib import Path

from judge import timeline
from judge.cases import canonical, expand_examples
from judge.groups import CaseFailed, draw_cases, run_cases, run_group
from judge.lanes import Lanes, Plan
from judge.options import planned_cases
from judge.problems import Group
from judge.verdicts import GroupResult, Verdict

BF16_NOTE = (
    "bfloat16 was not tested: Triton's interpreter computes bfloat16 on raw bits, "
    "so its results would be wrong for any kernel; it is tested on a GPU"
)
NOT_RUN = "not run"  # the message of a case a group did not run (after a worker death or the run's limit)


class GroupLoop:
    """The groups of one judging run; ``session``: its judge.session.Session, which runs their cases."""

    def __init__(self, session):
        self.session = session
        self.lanes: Lanes | None = None  # the workers' threads, running the groups' cases ahead (judge.lanes)
        self.plans: list[Plan] = []  # the groups' cases, drawn, as the lanes take them

    def run(self, scratch: Path) -> list[GroupResult]:
        """Every selected group in turn; a group after one whose verdict stops later groups is not run.

        A group whose cases all passed does not wait for its replays: the next group's cases run while the
        replay worker catches up (tests/gpu/RESULTS.md measured the wait at group ends). Its result is settled,
        in the groups' order, before the result of any later group that failed, and at the end. A finding there that stops later groups
        turns the groups run after it into "not run", as if it had been found at its own group's end: the
        results are the ones the groups would have had one after another."""
        results: list[GroupResult] = []
        open_runs: list[_GroupRun] = []  # passed their cases; replays not settled yet

        def stopped() -> Verdict | None:
            return next((r.verdict for r in results if r.verdict.stops_later_groups), None)

        def settle_open() -> None:
            while open_runs:
                run = open_runs.pop(0)
                if stopped() is not None:
                    results.append(_not_run(run.group, stopped()))
                    continue
                results.append(self._finish_group(run))

        if self.session.options.case is None and len(self.session.workers.all) > 1:
            self.lanes = Lanes(
                self.session.workers.all,
                self.session.lane_case,
                self.session.workers.up,
                self.session.progress.case_done,
            )
        try:
            last = len(self.selected()) - 1
            if self.lanes is not None and last > 0:
                # Every group's cases drawn now (the lanes start on the first group's as soon as it is drawn),
                # so that the last group's first case can go first (judge.lanes: Lanes.early).
                self._plan(last)
                self.lanes.early(last)
            for g in self.selected():
                if self._found_early(open_runs):
                    settle_open()
                if stopped() is not None:
                    results.append(_not_run(g, stopped()))
                    continue
                t_group = time.monotonic()
                run = self.run_group(g)
                if run.failure is None and self._defer_replays():
                    open_runs.append(run)
                else:
                    settle_open()
                    results.append(_not_run(g, stopped()) if stopped() is not None else self._finish_group(run))
                self.session.timing.setdefault("group_seconds", {})[g.name] = round(time.monotonic() - t_group, 3)
                timeline.add(f"group {g.name}", t_group, time.monotonic())
                if all(x.passed for x in results):  # (the open ones passed their cases)
                    self.session.speed.prestart(scratch, self.session.claim)
                else:
                    self.session.speed.drop(self.session.claim)
            settle_open()
        finally:
            if self.lanes is not None:
                if stopped() is not None:
                    # A failure stopped the later groups: a case run ahead for one of them (the last group's
                    # first case, taken early, say) is not waited for; its worker is stopped, and the lane's
                    # wait ends as that worker's death, in a group no one judges.
                    for ex in self.lanes.running_ahead():
                        ex.stop()
                self.lanes.close()
                self.session.timing["cases_ahead"] = self.lanes.ran_ahead  # taken before their group's turn
        return results

    def _found_early(self, open_runs: list[_GroupRun]) -> bool:
        """Whether a replay of a group still open came back with a finding that stops the later groups."""
        proofs = self.session.replays
        return proofs is not None and any(proofs.found_early(run.group.name) for run in open_runs)

    def _defer_replays(self) -> bool:
        """Whether a passing group's replays may be settled later."""
        return self.session.replays is not None

    def selected(self) -> list[Group]:
        if self.session.options.group is None:
            return list(self.session.problem.groups)
        return [g for g in self.session.problem.groups if g.name == self.session.options.group]

    def run_group(self, group: Group) -> _GroupRun:
        """Run a group's cases (Hypothesis, with the lanes running them ahead); its replays may still be in
        flight: _finish_group takes them."""
        opts = self.session.options
        interp = opts.interpret
        domain, examples, n, salt = self._drawing(group)
        self.session.frozen = False
        self.session.shrinking, self.session.tries = False, 0
        selected = [g.name for g in self.selected()]
        where = (selected.index(group.name) + 1, len(selected))
        ran = {"n": 0}
        dtypes = domain.get("dtype")
        if (
            interp
            and "bfloat16" in (dtypes if isinstance(dtypes, list) else [dtypes])
            and BF16_NOTE not in self.session.notes
        ):
            self.session.notes.append(BF16_NOTE)

        order: dict[str, int] = {}  # case key -> when the group's run first asked for it
        failed_at: list[int] = []  # the first failing case's place in that order
        passed: list[dict] = []  # the passing cases, in that order
        shrink_from: list[float] = []  # when the group's first failure came back (its shrinking starts)

        def counted(params):
            outcome = self.session.run_case(group, params)
            key = canonical(params)
            if key not in order:
                order[key] = len(order)
                if outcome.passed and outcome.message != NOT_RUN and not failed_at:
                    passed.append(params)
            if outcome.message != NOT_RUN:
                ran["n"] += 1
            if not outcome.passed:
                self.session.shrinking = True  # Hypothesis's next cases are tries at a smaller failing one
                if not failed_at:
                    failed_at.append(order[key])
                    shrink_from.append(time.monotonic())
            return outcome

        if opts.case is not None:
            self.session.progress.group(group.name, *where, planned=1)
            self.session.first[group.name] = canonical(opts.case)
            failure = run_cases([opts.case], counted)
        elif self.lanes is not None:
            # The lanes run the group's cases (judge.lanes); its drawn cases, and the next group's, which
            # the lanes take once this group's are all handed out, are drawn here meanwhile.
            index = where[0] - 1
            plan = self._plan(index)
            self.session.progress.group(group.name, *where, planned=len(plan.cases))
            self.lanes.begin(index)
            if index + 1 < len(selected):
                self._plan(index + 1)
            self.lanes.wait(index)
            self.session.frozen = False  # the shrinking pass decides again, in the cases' order
        else:
            cases = self._draw(group)
            self.session.progress.group(group.name, *where, planned=len(cases))
        if opts.case is None:
            failure = run_group(
                domain, examples, n, salt, counted, interpret=interp, shrink_seconds=opts.shrink_seconds
            )
            if shrink_from:  # what finding a smaller failing case cost (the tries, and cases run ahead)
                self.session.timing["shrink_seconds"] = round(
                    self.session.timing.get("shrink_seconds", 0.0) + time.monotonic() - shrink_from[0], 3
                )
                self.session.timing["shrink_tries"] = self.session.timing.get("shrink_tries", 0) + self.session.tries
        return _GroupRun(group, order, failed_at[0] if failed_at else None, passed, failure, ran["n"])

    def _drawing(self, group: Group) -> tuple[dict, list[dict], int, str]:
        """What a group's cases are drawn from: (domain, explicit examples, how many drawn, seed salt)."""
        interp = self.session.options.interpret
        domain = group.domain(interp)
        salt = f"{self.session.options.seed}:{self.session.problem.id}:{group.name}"
        examples = expand_examples(group.examples, domain, interp, salt)
        return domain, examples, planned_cases(group, self.session.options), salt

    def _draw(self, group: Group) -> list[dict]:
        """The cases run_group will run while they pass, in its order; the first is refilled and replayed."""
        domain, examples, n, salt = self._drawing(group)
        cases = draw_cases(domain, examples, n, salt, interpret=self.session.options.interpret)
        if cases:
            self.session.first[group.name] = canonical(cases[0])
        return cases

    def _plan(self, index: int) -> Plan:
        """The ``index``-th selected group's cases for the lanes, drawn (with the ones before it) if not yet."""
        selected = self.selected()
        while len(self.plans) <= index:
            group = selected[len(self.plans)]
            plan = Plan(len(self.plans), group, self._draw(group))
            self.plans.append(plan)
            self.lanes.add(plan)
        return self.plans[index]

    def _finish_group(self, run: _GroupRun) -> GroupResult:
        """A group's result once its replays are in: the first replay finding before its first failing case
        (or, where none of its replays went through, the replays in turn), else what its cases found."""
        group, failure = run.group, run.failure
        late = self.session.settle_replays(group, run.order, run.failed_at)
        if late is not None:
            failure = CaseFailed(*late)
        if failure is None:
            return GroupResult(group.name, group.about, group.points, True, run.cases_run)
        return GroupResult(
            name=group.name,
            about=group.about,
            points=group.points,
            passed=False,
            cases_run=run.cases_run,
            verdict=failure.outcome.verdict,
            case=failure.outcome.case or failure.params,
            message=failure.outcome.message,
            details=failure.outcome.details,
            repro=self._repro(group, failure.outcome.case or failure.params),
        )

    def _repro(self, group: Group, params: dict) -> str:
        parts = [
            "python",
            "-m",
            "judge",
            "test",
            str(self.session.problem.id),
            self.session.submission.name,
            "--group",
            group.name,
            "--case",
            json.dumps(params, separators=(",", ":")),
        ]
        if self.session.options.interpret and self.session.options.device == "cpu":
            parts += ["--device", "cpu"]
        elif self.session.options.interpret:
            parts += ["--device", self.session.options.device, "--interpret"]
        else:
            parts += ["--device", self.session.options.device]
        return shlex.join(parts)


@dataclass
class _GroupRun:
    """A group whose cases have run: what GroupLoop._finish_group needs once its replays are in."""

    group: Group
    order: dict  # case key -> when the group's run first asked for it
    failed_at: int | None  # the first failing case's place in that order
    passed: list  # the passing cases, in that order
    failure: object  # CaseFailed of its cases, or None
    cases_run: int


def _not_run(group: Group, after: Verdict) -> GroupResult:
    return GroupResult(
        group.name,
        group.about,
        group.points,
        False,
        0,
        after,
        skipped=f"not run: an earlier group ended with {after.value}",
    )
