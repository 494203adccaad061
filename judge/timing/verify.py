"""What the speed run checks of the submission beyond its times: the rulebook over each request's evidence, the
outputs of timed calls drawn at random against the golden model, and their replays.

For each shape the judge asks the submission for the outputs of one timed call it picks at random (with the
OS's randomness, after the last timed request: nothing the call ran could know), regenerates that call's inputs
from the seed and checks the outputs as a judged case's are checked. The replay worker (judge.replay), a second
sandboxed process that never imports the submission, replays the checked call's launches alone on fresh
inputs: a call honest when judged and otherwise when timed is RJ.
"""

from __future__ import annotations

import contextlib
import secrets
import threading
import time

from judge import rules, timeline
from judge.replies import parsers, records
from judge.shared import bench_inputs
from judge.timing.contenders import Contender, request
from judge.timing.findings import BenchFailed, shape_label
from judge.verdicts import Verdict


def rule_checks(file: str, reply: records.BenchResult, params: dict, warmup: bool) -> None:
    """The rulebook's anti-cheat rules over a timed request's evidence (judge.rules), as for a judged call
    (``file``: the submission's file name, for the finding)."""
    context = rules.Context(
        file=file, phase="warmup" if warmup else "timed", where=f"at bench shape {shape_label(params)}"
    )
    found = rules.violation(reply.evidence, (), context)
    if found is not None:
        raise BenchFailed(found.verdict.value, found.message, found.details)


def checks_ahead(cuda: bool) -> bool:
    """Whether the speed run checks a warm-up call of every shape ahead of the lock (Verifier.check_ahead): on a
    GPU, where it gets the replay worker's compiles done beside the tests (not in the interpreter, which
    compiles nothing; tests there patch this to run it)."""
    return cuda


class Verifier:
    """The output checks and replays of one run. ``compute``: the judge's own work for the checks and the replays
    beside them, one at a time. ``stopping``: set when the run is discarded; ``ahead_cut``: set once the run
    waits for the warm-up ahead, whose checks and replays not yet begun are then skipped (counted in
    ``ahead_skipped``). ``phase`` tells the progress what is being checked."""

    def __init__(
        self,
        problem,
        config,
        workers,
        notes,
        *,
        device: str,
        compute: threading.Lock,
        stopping: threading.Event,
        ahead_cut: threading.Event,
        phase,
    ):
        self.problem = problem
        self.config = config
        self.workers = workers
        self.notes = notes
        self.device = device
        self.compute = compute
        self.stopping = stopping
        self.ahead_cut = ahead_cut
        self.phase = phase
        self.ahead_check_seconds = 0.0  # the judge's seconds on the checks ahead
        self.ahead_skipped = {"checks": 0, "replays": 0}
        self.counting = threading.Lock()  # ahead_skipped, from a thread per replay worker

    def draw(self, checkable) -> list[int]:
        """The calls to check among those held (``checks_per_shape`` of them, drawn with the OS's randomness)."""
        left = list(checkable)
        return [left.pop(secrets.randbelow(len(left))) for _ in range(min(self.config.checks_per_shape, len(left)))]

    def fetch(self, sub: Contender, s: int, call: int) -> records.BenchOutputs:
        """The held outputs (and record) of call ``call`` of the submission's last request at shape s."""
        answer, _ = request(
            sub,
            {"type": "bench_check", "id": f"{s}-check", "shape": s, "call": call},
            parse=parsers.parse_bench_outputs,
        )
        return answer

    def check_ahead(self, s: int, params: dict, held: tuple | None, replays: Replays, shared) -> None:
        """Check a call of the warm-up ahead of the lock (``held``: the submission's warm-up request, its reply and
        seed; its outputs, then its replay, queued), as a timed call's is checked after the rounds
        (:meth:`check`, :meth:`replay`: the same rules), with the GPU taken shared.

        Its purpose is the replay worker's compiles: the replays after timing run the bench shapes' kernels, which the
        replay worker, compiling from the file's source into a cache of its own, had not compiled (the tests' shapes
        are other specializations). Cold, they make most of the checks after the rounds (docs/measurements: the speed
        run's schedule, the checks ahead). Here they run beside the session's later test groups, and the warm-up call
        is checked besides. A finding is the speed run's, raised by run()."""
        if held is None:
            return
        specs = self.problem.golden.bench_args(dict(params))
        t0 = time.monotonic()
        picked = replays.guarded(lambda: self.check(s, specs, held, what="warm-up call", shared=shared))
        self.ahead_check_seconds += time.monotonic() - t0
        for call, answer in picked:
            replays.queue(s, specs, call, answer)

    def checks(
        self, plans, picked: dict | None = None, fetched: dict | None = None, shared=contextlib.nullcontext
    ) -> list[dict]:
        """Every shape's check of a timed call (:meth:`check`), and the replay of each checked call (:meth:`replay`).

        A replay runs in the replay worker while the judge goes on checking the next shape's outputs (they
        share nothing: the replay has fresh inputs of its own), so its compiles and run overlap the output
        transfers and golden answers that follow, instead of adding to them. Findings are taken in the order
        the calls were checked, as if each replay had been waited for in turn: a replay's finding comes
        before a later shape's wrong output.
        """
        sub = next(c for c in self.workers.contenders if c.name == "submission")
        n = len(plans)
        checked = []
        with Replays(self, shared=shared) as replays:
            for s, plan in enumerate(plans):
                self.phase(f"checking outputs: shape {s + 1} of {n}")
                calls = None if picked is None else picked.get(s, [])
                got = None if fetched is None else fetched.get(s, {})
                with timeline.span(f"speed run: check shape {s + 1}"):
                    done = replays.guarded(
                        lambda: self.check(s, plan["specs"], sub.last[s], calls=calls, fetched=got, shared=shared)
                    )
                checked.append({"calls": [call for call, _ in done]})
                for call, answer in done:
                    replays.queue(s, plan["specs"], call, answer)
            replays.settle()
        return checked

    def check(
        self,
        s: int,
        specs: list,
        held: tuple,
        *,
        what: str = "timed call",
        shared=contextlib.nullcontext,
        calls: list | None = None,
        fetched: dict | None = None,
    ) -> list[tuple[int, records.BenchOutputs]]:
        """Outputs of randomly chosen calls of the submission's last request at shape s (``held``: its reply and
        seed), against the golden model: the same rule as a judged case's outputs (judge.rules.outputs). The
        calls checked, with their outputs (and records, for the replay). ``what`` names the calls in a
        finding; ``shared`` is held around each request and golden answer (the GPU taken shared, ahead of the
        lock); ``calls``: the calls to check, drawn already (SpeedRun._trim), else drawn here; ``fetched``: their
        outputs, fetched already (SpeedRun._trim), else asked for here."""
        from judge import expected, kit
        from judge.rules import outputs as output_rules

        sub = next(c for c in self.workers.contenders if c.name == "submission")
        reply, seed = held
        checkable = list(reply.checkable)
        if not checkable:
            raise BenchFailed(Verdict.RJ, f"the worker held no outputs of its {what}s to check")
        if calls is None:
            calls = self.draw(checkable)
        params = self.config.shapes[s]
        label = shape_label(params)
        dev = "cuda" if self.device == "cuda" else "cpu"
        picked = []
        for call in calls:
            with shared():
                answer = fetched[call] if fetched is not None and call in fetched else self.fetch(sub, s, call)
                if not answer.present:
                    raise BenchFailed(Verdict.RJ, f"the outputs of {what} {call} were not there to check")
                with self.compute:
                    args = bench_inputs.make(specs, bench_inputs.call_seed(seed, call), dev)
                    answers = expected.answers(self.problem, args, params.get("dtype", "float32"), dev, params)
                    wrong = output_rules.check(self.problem, answer.returned, answer.outputs, answers, dev)
                    del args, answers
                    kit.release_cached()
            if wrong is not None:
                raise BenchFailed(
                    Verdict.WA,
                    f"{what} {call} at bench shape {label}: {wrong.message}",
                    {"shape": params, "call": call},
                )
            picked.append((call, answer))
        return picked

    def replay(
        self, s: int, specs: list, call: int, found, *, what: str = "timed call", shared=contextlib.nullcontext
    ) -> None:
        """What the replay of a checked call found (judge.replay.Replayer.check_bench: its launches, replayed
        alone on fresh inputs, must compute the answer): a call honest when judged and otherwise when timed
        is RJ. Wrong there, the same fresh inputs are given to the submission's worker: wrong in its process
        too is WA, right there RJ stands."""
        from judge.replay import Skipped

        params = self.config.shapes[s]
        label = shape_label(params)
        if isinstance(found, Skipped) and found.counts and not found.limits:
            # As a test group none of whose cases could be replayed: otherwise a submission could opt its
            # timed calls out of the check, say by flooding their record only at the (public) bench shapes.
            raise BenchFailed(
                Verdict.RJ,
                f"{what} {call} at bench shape {label} could not be replayed alone on "
                f"fresh inputs ({found.note}); it must be",
                {"shape": params, "replay": "none"},
            )
        if isinstance(found, Skipped):
            self.notes.add(f"the {what} at {label} was not replayed: {found.note}")
            return
        if found is None:
            return
        if found.case is not None:
            base = found.case["bench_seed"]
            sub = next(c for c in self.workers.contenders if c.name == "submission")
            msg = {
                "type": "bench",
                "id": f"{s}-fresh",
                "shape": s,
                "args": specs,
                "samples": 1,
                "per_sample": 1,
                "seed": base,
                "sets": 1,
                "flush_bytes": 0,
                "keep": True,
                "graph": False,
            }
            from judge import expected, kit
            from judge.rules import outputs as output_rules

            dev = "cuda" if self.device == "cuda" else "cpu"
            with shared():
                request(sub, msg)
                again, _ = request(
                    sub,
                    {"type": "bench_check", "id": f"{s}-fresh", "shape": s, "call": 0},
                    parse=parsers.parse_bench_outputs,
                )
                with self.compute:
                    args = bench_inputs.make(specs, bench_inputs.call_seed(base, 0), dev)
                    answers = expected.answers(self.problem, args, params.get("dtype", "float32"), dev, params)
                    wrong = (
                        output_rules.check(self.problem, again.returned, again.outputs, answers, dev)
                        if again.present
                        else None
                    )
                    del args, answers
                    kit.release_cached()
            if wrong is not None:
                raise BenchFailed(
                    Verdict.WA,
                    f"a call at bench shape {label} on new inputs: {wrong.message}",
                    {"shape": params, "found_by": "the replay check's fresh inputs"},
                )
        raise BenchFailed(
            found.verdict.value,
            f"{what} {call} at bench shape {label}: {found.message}",
            {"shape": params, "call": call, **found.details},
        )


class Discarded(Exception):
    """A run discarded while one of its replays waited for the GPU: the replay is not carried out."""


class Replays:
    """The replays of checked calls (judge.replay.Replayer.check_bench), one at a time in a thread of their own
    beside the judge's next checks, their findings taken in the order the calls were checked (settle), as if
    each had been waited for in turn. ``what`` names the calls in a finding; ``shared`` is held around each
    replay (the GPU taken shared, ahead of the lock). Without a replay worker, nothing is queued."""

    def __init__(self, verifier: Verifier, *, what: str = "timed call", shared=contextlib.nullcontext):
        from concurrent.futures import ThreadPoolExecutor

        self.verifier, self.what, self.shared = verifier, what, shared
        self.pending: list = []  # (shape, specs, call, future of the replay's finding)
        # One thread per replay worker: each replay takes a free one (judge.replayers.Replayers).
        replayer = verifier.workers.replayer
        lanes = len(getattr(replayer, "members", [replayer]))
        self.pool = ThreadPoolExecutor(lanes, thread_name_prefix="judge-bench-replay") if replayer else None

    def __enter__(self) -> Replays:
        return self

    def __exit__(self, *exc) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)

    def queue(self, s: int, specs: list, call: int, answer) -> None:
        if self.pool is None:
            return
        verifier, shared = self.verifier, self.shared
        replayer, params = verifier.workers.replayer, verifier.config.shapes[s]

        def replay():
            if self.what == "warm-up call" and verifier.ahead_cut.is_set():
                with verifier.counting:
                    verifier.ahead_skipped["replays"] += 1
                return None  # the run waits for the warm-up ahead: the timed calls' replays come soon
            with timeline.span(f"replay ({self.what}, shape {s + 1})"):
                if verifier.stopping.is_set():
                    return None  # discarded: its worker is closed, nothing to replay for

                @contextlib.contextmanager
                def gpu():  # the replay's GPU work (after its compile pass, judge.replay.Replayer.precompile)
                    with shared():
                        if verifier.stopping.is_set():
                            raise Discarded  # discarded while it waited
                        yield

                try:
                    return replayer.check_bench(params, specs, answer, verifier.device, shared=gpu)
                except Discarded:
                    return None

        self.pending.append((s, specs, call, self.pool.submit(replay)))

    def cancel(self) -> None:
        """Drop the replays not begun (a discarded run); the one running ends with the replay worker."""
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)

    def guarded(self, check):
        """``check()``; should it fail, an earlier call's replay finding is raised first."""
        try:
            return check()
        except Exception:  # noqa: BLE001 - an earlier call's replay finding comes first, as in turn
            self.settle()
            raise

    def settle(self) -> None:
        n = len(self.verifier.config.shapes)
        while self.pending:
            s, specs, call, future = self.pending.pop(0)
            self.verifier.phase(f"replaying a {self.what}: shape {s + 1} of {n}")
            with timeline.span(f"speed run: wait for the replay of shape {s + 1}"):
                found = future.result()
            self.verifier.replay(s, specs, call, found, what=self.what, shared=self.shared)
