"""A judging run's replays (judge.proofs schedules them): the replay workers started beside the submission's, and a
group's replays settled at its end, where a case is run again, or a finding judged, in the submission's own worker.
"""

from __future__ import annotations

from dataclasses import replace

from judge import progress as progress_words
from judge.options import Options, replay_workers
from judge.problems import Group, Problem
from judge.proofs import Proofs
from judge.replay import Replayer
from judge.replayers import Replayers
from judge.sandbox import Job
from judge.verdicts import Outcome


def start(
    problem: Problem, job: Job, backend, options: Options, *, golden_device: str, time_left, run_seconds: float
) -> Proofs:
    """The run's replay workers, started now, and the Proofs that replays its passing cases on them."""
    count = replay_workers(options.device, options.interpret, lone=options.speed_early)
    members = [
        Replayer(problem, job, backend, threads=options.threads, golden_device=golden_device, seed=options.seed)
        for _ in range(count)
    ]
    replayer = members[0] if count == 1 else Replayers(members)
    # Started now, it imports torch and Triton while the submission's worker does: cheaper than
    # waiting for it at the first replay wherever a core is free.
    replayer.prestart()
    return Proofs(
        replayer,
        "cuda" if options.device == "cuda" else "cpu",
        workers=count,
        time_left=time_left,
        run_seconds=run_seconds,
    )


def settle(
    proofs: Proofs, group: Group, order: dict, failed_at: int | None, *, in_first_worker, call, progress
) -> tuple[tuple[dict, Outcome] | None, float]:
    """The group's replays (judge.proofs.Proofs.settle): (the first finding before its first failing case, as
    (params, outcome), or None; the seconds waited for them).

    ``in_first_worker(work)``: ``work(ex)`` on the submission's first worker, held for it and started again if it
    died, the run's limit permitting; else the Outcome that stopped it. ``call(ex, params, group)``: a case run
    and judged on worker ``ex`` (judge.case_call.CaseCall)."""

    def waiting(on: bool) -> None:
        progress.lane(0, progress_words.REPLAYING if on else None)

    def again(params: dict) -> tuple[Outcome, tuple | None]:
        """A passing case whose record could not be replayed, run once more in the first worker (the run's limit
        permitting): (its outcome, (inputs, reply) when it passed)."""
        got = in_first_worker(lambda ex: call(ex, params, group))
        if isinstance(got, Outcome):
            return got, None
        outcome, _, _, last = got
        return outcome, last

    def judged(found: Outcome) -> Outcome:
        """A replay's finding; one that carries its fresh inputs (wrong on them) has them judged in the
        submission's own worker first (fresh_case_in_worker)."""
        if found.case is None:
            return found
        return in_first_worker(lambda ex: fresh_case_in_worker(call(ex, found.case, group)[0], found))

    return proofs.settle(group.name, order, failed_at, again, judged, waiting)


def fresh_case_in_worker(own: Outcome, found: Outcome) -> Outcome:
    """The replay's fresh inputs, on which the replayed launches missed the answer, judged as a case in the
    submission's own worker (``own``: its outcome there). Wrong there too, it is that case's verdict (a kernel that
    is wrong on some values is WA, not a forgery: replays of the corpus's WA files drew such values). Right there,
    the launches do not do alone what the call did in the worker: RJ stands."""
    if not own.passed:
        return replace(
            own,
            case=found.case,
            details={**own.details, "found_by": "the replay check's fresh inputs for the same case"},
        )
    return replace(
        found,
        case=None,
        message=f"{found.message}; on the same inputs your file's call in its own process computed the answer",
    )
