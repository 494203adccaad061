"""Every passing case of the test groups proven by a replay: the property a correctness AC rests on.

The worker's outputs are evidence from the submission's own process, where host code can put any answer into
an output a kernel was given. So a case counts as passed only once the file's kernels, replayed alone
(judge.replay: a process where the submission's host code never ran, on fresh inputs drawn from the case's
secret seed), computed outputs that pass the same output check. Every passing case is replayed, not a sample:
a kernel that behaves otherwise when it is replayed (it told the two processes apart) is then either right
everywhere alone, and the answer that counts was computed by its kernels, or wrong on some replay, and the
case is RJ (or WA, when the submission's own worker is wrong on the same fresh inputs: judge.session_replays).

The worker's outputs stay the fast path: a wrong answer there fails the case at once, with its message and
hints. A passing case's replay runs in a thread pool while the lanes go on with the next cases (in the
interpreter the replay worker has the core the case's worker does not use), and a group's replays are
settled at its end, in the order the group's run asked for its cases (:meth:`Proofs.settle`).

What a replay that did not go through means here:

* its record could not be replayed (cut short: more launches or blocks of memory than the record holds; an
  argument the replay does not rebuild): the case is run again in the worker and that record replayed at once
  (a record is untrusted anyway, only what its replay computes counts); not replayable twice is RJ;
* the replay ran out of time (2x the case's limit, and never past the run's limit), memory or output: TLE,
  MLE or OLE of the case, as the kernels alone did;
* a problem whose inputs change layout with their seed cannot be replayed on fresh ones: a note, and the case
  is counted apart (``cases_not_replayable``), as are the cases of a group Inductor compiles
  (judge.calls.replayed).

The tally (:attr:`Proofs.tally`, in the report's ``timing``): ``cases_passed`` (distinct passing cases of
the groups' runs, Hypothesis's tries while shrinking a failure left out), ``cases_proven`` (those whose replay
computed the answer) and ``cases_not_replayable``. In a report whose groups all passed, ``cases_proven +
cases_not_replayable == cases_passed``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from judge import timeline
from judge.cases import canonical
from judge.replay import Skipped
from judge.verdicts import Outcome, Verdict

# A replay that ran out of a limit: the case's verdict, as if its kernels had done so in the worker.
LIMITS = {
    "timeout": (Verdict.TLE, "did not finish within twice the case's time limit"),
    "memory": (Verdict.MLE, "ran out of memory"),
    "output": (Verdict.OLE, "printed more than the output limit"),
}


class Proofs:
    """The replays of one judging run's passing cases, and their tally."""

    def __init__(self, replayer, device: str, *, workers: int, time_left, run_seconds: float):
        self.replayer = replayer  # judge.replay.Replayer or Replayers
        self.device = device  # "cuda" or "cpu"
        self.time_left = time_left  # seconds left of the run's limit (the replays never run past it)
        self.run_seconds = run_seconds
        self.notes: list[str] = []
        self.tally = {"cases_passed": 0, "cases_proven": 0, "cases_not_replayable": 0}
        self._lock = threading.Lock()
        # One replay at a time per replay worker (Replayers hands each replay a free one of its own).
        self._one = threading.Lock() if workers == 1 else contextlib.nullcontext()
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="judge-replay")
        self._pending: dict[str, list] = {}  # group -> [(case key, params, future)]
        self._shared = contextlib.nullcontext  # held around a replay's GPU work (the session's, from passed())
        self._seen: set[str] = set()  # group|case keys counted

    # ------------------------------------------------------------------ cases

    def passed(self, group: str, params: dict, last: tuple, replayable: bool, shared) -> None:
        """A passing case of a group's run (``last``: its inputs and the worker's reply): its replay starts now,
        in the pool; the group's end takes what it found (:meth:`settle`)."""
        key = f"{group}|{canonical(params)}"
        self._shared = shared
        with self._lock:
            if key in self._seen:
                return
            self._seen.add(key)
            self.tally["cases_passed"] += 1
            if not replayable:
                self.tally["cases_not_replayable"] += 1
                return

        def replay():
            with timeline.span(f"replay ({group})"):
                return self.replay(params, *last, shared=shared)

        future = self._pool.submit(replay)
        with self._lock:
            self._pending.setdefault(group, []).append((canonical(params), params, future))

    def replay(self, params: dict, inputs: list, reply, shared=contextlib.nullcontext):
        """One case's replay, now: an Outcome (a finding), Skipped, or None (its kernels computed the answer)."""
        with self._one:
            return self.replayer.check(params, inputs, reply, self.device, shared=shared, time_left=self.time_left)

    def found_early(self, group: str) -> bool:
        """Whether one of ``group``'s replays already came back with a finding that stops the later groups (a
        rule broken, a limit run out). The group loop then settles at once: the groups it would still run could
        only end "not run" (a cheat's later groups and every later replay would otherwise run first)."""
        with self._lock:
            pending = list(self._pending.get(group, []))
        for _, _, f in pending:
            if not f.done() or f.cancelled() or f.exception() is not None:
                continue
            found = f.result()
            if isinstance(found, Outcome) and found.verdict.stops_later_groups:
                return True
            if isinstance(found, Skipped) and found.limits:
                return True
        return False

    def settle(self, group: str, order: dict, failed_at: int | None, again, judged, progress=None):
        """The group's replays, waited for: the first finding, in the order the group's run asked for the cases,
        that comes before its first failing case, as (params, outcome); or None. The same finding as if each
        replay had been waited for in its case.

        ``again(params)``: the case run once more in the submission's worker, as (its outcome, (inputs, reply)
        of a pass or None), for a case whose record could not be replayed; ``judged(outcome)``: a replay's
        finding as the session judges it (a wrong answer on fresh inputs is run in the worker too). Waiting stops
        at the first finding: the replays after it, and those of cases past the group's first failure, are
        dropped where not begun, and not waited for where they are."""
        with self._lock:
            pending = sorted(self._pending.pop(group, []), key=lambda x: order.get(x[0], float("inf")))
        last = failed_at if failed_at is not None else float("inf")
        # Past the group's first failure a replay decides nothing: not waited for (one not begun is dropped).
        needed = [(key, params, f) for key, params, f in pending if order.get(key, float("inf")) < last]
        for _, _, f in pending[len(needed) :]:
            f.cancel()
        waiting = any(not f.done() for _, _, f in needed)
        if waiting and progress is not None:
            progress(True)  # the group waits for its last replays
        t0 = time.monotonic()
        found_first = None
        try:
            for i, (_key, params, future) in enumerate(needed):
                outcome = self._outcome(group, params, future.result(), again)
                if outcome is not None:
                    found_first = (params, judged(outcome))
                    # The first finding in the cases' order is the group's: the later replays decide nothing
                    # (a kernel that stalls when replayed would otherwise cost each its own time limit).
                    for _, _, later in needed[i + 1 :]:
                        later.cancel()
                    break
        finally:
            if waiting and progress is not None:
                progress(False)
            timeline.add(f"settle {group}'s replays", t0, time.monotonic(), replays=len(pending))
        return found_first, time.monotonic() - t0

    def _outcome(self, group: str, params: dict, found, again) -> Outcome | None:
        """What one case's replay means for the case: None (proven, or counted apart with a note), or an Outcome."""
        if isinstance(found, Skipped) and found.limits:
            self._count(found)
            return self.limit_outcome(found)
        if isinstance(found, Skipped) and found.counts:
            # Its record could not be replayed: the case once more in the worker, and that record replayed.
            outcome, last = again(params)
            if outcome is not None and not outcome.passed:
                return outcome
            second = self.replay(params, *last, shared=self._shared) if last is not None else found
            if isinstance(second, Skipped) and second.limits:
                self._count(second)
                return self.limit_outcome(second)
            if isinstance(second, Skipped) and second.counts:
                self._count(second)
                return Outcome(
                    Verdict.RJ,
                    f"the replay check: this passing case's call could not be replayed "
                    f"alone on fresh inputs, twice ({second.note}); every passing case "
                    "must be",
                    {"replay": "none"},
                )
            found = second
        self._count(found)
        return found if isinstance(found, Outcome) else None

    def _count(self, found) -> None:
        with self._lock:
            if found is None:
                self.tally["cases_proven"] += 1
            elif isinstance(found, Skipped) and not found.counts and not found.limits:
                self.tally["cases_not_replayable"] += 1
                if not any(n.startswith(found.note) for n in self.notes):
                    self.notes.append(found.note)

    def limit_outcome(self, found: Skipped) -> Outcome:
        if found.reason == "starved":
            return Outcome(
                Verdict.IE,
                "the replay check of a passing case could not be finished: the host's other work kept its "
                "worker from a core (judge it again on a quieter machine)",
                {"replay": found.reason},
            )
        if found.reason == "run" or found.reason not in LIMITS:
            return Outcome(
                Verdict.TLE,
                f"the whole run exceeded its limit of {self.run_seconds:g} s "
                "(the replay check of a passing case was still running)",
            )
        verdict, what = LIMITS[found.reason]
        return Outcome(
            verdict, f"replayed alone on fresh inputs, your recorded launches {what}", {"replay": found.reason}
        )

    # ------------------------------------------------------------------ the end

    def shutdown(self) -> None:
        """Replays not begun are dropped; the one running ends within its own limit (never past the run's)."""
        self._pool.shutdown(wait=True, cancel_futures=True)
