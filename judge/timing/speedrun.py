"""The timing protocol, judge side: who runs, in what order, and what the numbers mean.

Three workers run on the same GPU, each in its own process: the submission
(in the session's sandbox), the reference solution and the PyTorch baseline
(trusted code, plain processes). The submission can never touch the
reference's process or its timing. For every benchmark shape each worker
first makes one untimed call under the full watch (which kernels ran; no
PyTorch operator did the work) that also compiles and autotunes, and times two
samples; from those the judge makes one plan per shape for every worker: K
calls per timed sample (enough for 100 us of GPU work at the fastest worker's
pace, at most 64; see judge/untrusted/bench.py for how a sample is timed),
the samples per request, the input sets. Then the judge runs rounds: in each
round every shape is timed by every worker, one after the other (reference
and submission swap places every round, so neither always runs on a warmer
GPU). After each round the judge computes the speedups and stops once the
geometric mean's 95% interval is narrow enough (or a budget runs out). Then,
for each shape, it asks the submission for the outputs of one timed call it
picks at random, regenerates that call's inputs from the seed and checks the
outputs against the golden model. Last, every worker times a few samples of
every shape under the CUDA profiler: the GPU's own records of the kernels,
a second clock held against the events (checks.compare_clocks).

One judge at a time per GPU (judge.timing.lock); the GPU's ceilings come
from judge.timing.ceilings. What does not need the GPU to itself runs beside
other judges' correctness cases, each request taking the GPU shared as a case
does: the warm-up, during the session's later test groups (prewarm; on a GPU
with a warm-up call of every shape checked and replayed, so that the replay
worker's compiles are done by the time the timed calls are replayed), and the
output checks with their replays, after the profiler clock, which runs right
after the rounds. The result is the report's ``speed`` section.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from judge import timeline
from judge.options import torch_index
from judge.progress import NO_PROGRESS
from judge.replies import parsers
from judge.timing import result, stats, verify
from judge.timing.contenders import Workers, request
from judge.timing.findings import BenchFailed, Notes
from judge.timing.measure import Measure
from judge.timing.plan import MAX_PER_SAMPLE, SAMPLE_TARGET, Planner
from judge.timing.score import SpeedScore
from judge.timing.verify import Replays, Verifier
from judge.verdicts import Verdict


@dataclass
class BenchConfig:
    shapes: list  # parameter tables, from problem.toml [bench]
    stop: stats.StopRule = field(default_factory=stats.StopRule)
    request_seconds: float = 0.02  # kernel time per worker request (sets the number of samples)
    min_calls: int = 5  # samples per request, at least ...
    max_calls: int = 50  # ... and at most
    sample_target: float = SAMPLE_TARGET
    max_per_sample: int = MAX_PER_SAMPLE
    max_batched_samples: int = 10  # samples per request at most when K > 1
    floor_margin: float = 0.8
    checks_per_shape: int = 1
    torch_baseline: bool = True
    profile_samples: int = 3  # samples per shape and worker timed by the CUDA profiler as well (0: none)
    graphs: bool = True  # a sample of K > 1 calls is captured once into a CUDA graph and replayed


def config_for(problem, *, interpret: bool, overrides: dict | None = None) -> BenchConfig:
    """The [bench] section of problem.toml, with command-line overrides (None values ignored)."""
    spec = dict(problem.spec.get("bench", {}))
    spec.update({k: v for k, v in (overrides or {}).items() if v is not None})
    shapes = spec.get("interpret_shapes" if interpret else "shapes") or []
    if interpret and not shapes:
        shapes = spec.get("shapes", [])[:1]
    if spec.get("only") is not None:
        shapes = [shapes[i] for i in spec["only"] if 0 <= i < len(shapes)]
    stop = stats.StopRule(
        ci_target=float(spec.get("ci_target", 0.01)),
        min_rounds=int(spec.get("min_rounds", 3)),
        max_rounds=int(spec.get("max_rounds", 30)),
        budget_seconds=float(spec.get("budget_seconds", 20.0)),
    )
    return BenchConfig(
        shapes=[dict(s) for s in shapes],
        stop=stop,
        request_seconds=float(spec.get("request_seconds", 0.02)),
        torch_baseline=bool(spec.get("torch_baseline", True)),
    )


class SpeedRun:
    """One speed run; ``run()`` returns the report's speed section (a dict) or raises BenchFailed
    (judge.timing.findings). It orders the parts: its workers (``workers``, judge.timing.contenders), the
    warm-up and plans (``planner``, judge.timing.plan), the rounds and the profiler clock (``measure``,
    judge.timing.measure), the output checks and replays (``verifier``, judge.timing.verify) and the result
    (judge.timing.result); and it decides what runs ahead of the GPU's lock, under it, and after it."""

    def __init__(
        self,
        problem,
        submission: Path,
        *,
        device: str,
        interpret: bool,
        gpu: int | None,
        backend,
        limits,
        scratch: Path,
        config: BenchConfig,
        log=None,
        progress=None,
        replay: bool = True,
        replay_workers: int = 1,
    ):
        self.problem = problem
        self.submission = Path(submission)
        self.device = device
        self.cuda = device == "cuda" and not interpret
        self.interpret = interpret
        self.gpu = gpu or 0
        self.config = config
        self.log = log or (lambda m: None)
        self.progress = progress or NO_PROGRESS  # judge.progress: the phase, shape and round now
        self.notes = Notes()
        self.score = SpeedScore.from_spec(problem.spec.get("score", {}), problem.speed_points)
        # The judge's own work for the output checks and for the replays beside them (judge.replay.Replayer):
        # one at a time (see judge.timing.verify).
        self._compute = threading.Lock()
        self._stopping = threading.Event()
        # Set once run() waits for the warm-up ahead: the checks and replays ahead not yet begun are skipped
        # (Verifier.ahead_skipped). Their purpose was to get work done beside the tests; once the tests are
        # over and the run waits for them, they are the run's wait instead (docs/measurements: the speed run's
        # schedule). Skipped, the timed calls are checked and replayed after the rounds as always, and a replay
        # compiles what it lacks in its compile pass (judge.replay.Replayer.precompile).
        self._ahead_cut = threading.Event()
        # ``replay``: the replay check of the timed calls whose outputs are checked (judge.replay), a second
        # sandboxed process that never imports the submission. ``replay_workers``: how many, each replaying
        # one checked call at a time (judge.options.replay_workers: three for a lone submit on a GPU host of
        # 12 cores or more, else two). With one, the timed calls' replays after the rounds run one after
        # another while the report waits, seconds of it (docs/measurements: the speed run's schedule).
        self.workers = Workers(
            problem,
            self.submission,
            device=device,
            interpret=interpret,
            gpu=self.gpu,
            backend=backend,
            limits=limits,
            scratch=scratch,
            torch_baseline=config.torch_baseline,
            replay=replay,
            replay_workers=max(1, int(replay_workers)),
            compute=self._compute,
            stopping=self._stopping,
        )
        file = self.submission.name
        self.planner = Planner(
            problem, config, self.workers, self.notes, file=file, cuda=self.cuda, gpu=self.gpu, stopping=self._stopping
        )
        self.measure = Measure(config, self.workers, self.notes, file=file, phase=self._phase)
        self.verifier = Verifier(
            problem,
            config,
            self.workers,
            self.notes,
            device=device,
            compute=self._compute,
            stopping=self._stopping,
            ahead_cut=self._ahead_cut,
            phase=self._phase,
        )
        # The warm-up ahead of the lock (prewarm): a thread, and what it raised.
        self._prewarm: threading.Thread | None = None
        self._prewarm_failed: BaseException | None = None
        self._prewarm_seconds: float | None = None
        # The figures of the warm-up's checks ahead of the lock (Verifier.check_ahead), and their replays.
        self._ahead_phases: dict = {}
        self._ahead_replays: Replays | None = None
        self._waits: dict = {}  # run()'s waits before the timed work (on a GPU)
        self.close_seconds = 0.0  # what _close waited for: the workers' exits
        self.reservation = None  # the session's GPU reservation (judge.gpu_admission), told when it times

    # ------------------------------------------------------------------ ahead of the lock

    def spawn(self) -> None:
        """Spawn the workers (judge.timing.contenders.Workers.spawn) and return: they start while the judge goes
        on (a session calls this while its later test groups run; run() greets them). Idempotent; what fails
        here is raised by run()."""
        self.workers.spawn()

    def prewarm(self, shared=None) -> None:
        """Greet the spawned workers and warm every shape up (judge.timing.plan.Planner.warm_up) in a thread of
        its own, while the session's later test groups run; return at once.

        A warm-up call compiles the kernels of the bench shapes, autotunes and runs under the full watch: work a
        correctness case does, not timed work. Done here it overlaps the tests (seconds of a speed run even
        after a warm kernel cache, more beside other judges' cases: docs/measurements, the speed run's schedule)
        and no longer holds the GPU to itself: each warm-up request takes the GPU shared, as a
        case does (``shared``: a context manager factory taking ``cancel``, an event that ends its wait, as
        judge.timing.lock.gpu_shared does: discard() sets it). run() waits for it before it takes the lock,
        then warms each shape up again (judge.timing.plan.Planner.plan), now without compiles: the
        watched call's evidence through the rulebook, the autotuners' choices made afresh and the paces measured
        on the GPU held alone, so the plan is made from the same figures as before. What it raises is raised by
        run(), which then closes the workers; a run that is discarded (a later group failed) drops it."""
        if self._prewarm is not None:
            return
        self.spawn()
        given = shared
        shared = (lambda: given(cancel=self._stopping)) if given is not None else contextlib.nullcontext

        def warm_all() -> None:
            t0 = time.monotonic()
            try:
                if self.workers.spawn_failed is not None:
                    return  # run() raises it
                with timeline.span("speed run: start the workers (ahead)"):
                    self.workers.start()
                ahead = verify.checks_ahead(self.cuda)
                with Replays(self.verifier, what="warm-up call", shared=shared) as replays:
                    self._ahead_replays = replays  # (discard() cancels what it has not begun)
                    for s, params in enumerate(self.config.shapes):
                        if self._stopping.is_set():
                            return

                        def warm(s=s, params=params) -> None:
                            with shared(), timeline.span(f"speed run: warm-up ahead, shape {s + 1}"):
                                self.planner.warm_up(s, params, keep=ahead)

                        # (A warm-up's failure comes after an earlier shape's replay finding, as in turn.)
                        replays.guarded(warm)
                        self.planner.warmed.add(s)
                        if ahead and self._ahead_cut.is_set():
                            self.verifier.ahead_skipped["checks"] += 1
                            self.planner.held.pop(s, None)
                        elif ahead:
                            with timeline.span(f"speed run: check ahead, shape {s + 1}"):
                                self.verifier.check_ahead(s, params, self.planner.held.pop(s, None), replays, shared)
                    with timeline.span("speed run: settle the replays ahead"):
                        replays.settle()
                if ahead:  # the figures of the checks ahead, for the phases (the replays': the worker's so far)
                    self._ahead_phases = {"ahead_check_seconds": round(self.verifier.ahead_check_seconds, 3)}
                    skipped = self.verifier.ahead_skipped
                    if any(skipped.values()):
                        self._ahead_phases.update(
                            ahead_checks_skipped=skipped["checks"], ahead_replays_skipped=skipped["replays"]
                        )
                    replayer = self.workers.replayer
                    if replayer is not None:
                        self._ahead_phases.update(
                            ahead_replays=replayer.timing["replays"],
                            ahead_replay_seconds=round(replayer.timing["replay_seconds"], 3),
                        )
                with timeline.span("speed run: trim after the warm-up ahead"):
                    self._drop_warm_up(shared)
            except BaseException as exc:  # noqa: BLE001 - run() raises it, unless the run is discarded
                self._prewarm_failed = exc
            finally:
                self._prewarm_seconds = round(time.monotonic() - t0, 3)

        self._prewarm = threading.Thread(target=warm_all, name="judge-speed-prewarm", daemon=True)
        self._prewarm.start()

    def _drop_warm_up(self, shared) -> None:
        """After the warm-up ahead (and its checks), every worker lets go of what it holds for timing: the
        shapes' input sets, the flush buffer, the warm-up calls' outputs (bench_trim; the run's own warm-up
        under the lock allocates them again). Its compiled kernels stay. A warmed-up run may wait minutes for
        the lock behind other judges' speed runs, and a dozen waiting judges' workers each holding a bench set
        can fill the GPU they share."""
        for c in self.workers.contenders:
            if self._stopping.is_set():
                return
            with shared():
                request(c, {"type": "bench_trim", "id": "warm-trim"}, parse=parsers.parse_bench_trimmed)

    def discard(self) -> None:
        """Stop whatever this run started (a session whose tests failed calls this: no speed run)."""
        self._stopping.set()  # the warm-up thread sends no further request, nor waits for the GPU ...
        if self._ahead_replays is not None:
            self._ahead_replays.cancel()  # ... its replays not begun are dropped ...
        self._close()  # ... and the one in flight ends with its worker
        if self._prewarm is not None:
            # Its request in flight ended with its worker; it may still wait for the GPU's lock behind another
            # judge's speed run (no wait there can be cut short), then sends nothing: not worth the report's wait.
            self._prewarm.join(timeout=5)
        self.workers.contenders = []  # closed: nothing of this run is left to time

    def _close(self) -> None:
        t0 = time.monotonic()
        self.workers.close()
        self.close_seconds += time.monotonic() - t0

    # ------------------------------------------------------------------ the run

    def run(self) -> dict:
        from judge.timing import lock

        if not self.config.shapes:
            raise BenchFailed(Verdict.IE, f"problem {self.problem.id} has no [bench] shapes")
        if not self.cuda:
            try:
                self._join_prewarm()
                # As on a GPU: the profiler clock (in the interpreter, only its rules) right after the rounds,
                # then the trim and the checks.
                state = self._timed()
                self._trim(state)
                return self._finish(state)
            finally:
                self._close()

        def waiting(message: str) -> None:
            self.progress.stage("speed run: waiting for the GPU (another judge is timing on it)")
            self.log(message)

        t0 = time.monotonic()
        try:
            self._join_prewarm()
        except BaseException:
            self._close()  # the warm-up ahead failed: its workers end here, as a failed warm-up's did in the lock
            raise
        t1 = time.monotonic()
        with lock.gpu_lock(self.gpu, on_wait=waiting), self._timed_region():
            # What the run waited for before its timed work: the warm-up ahead (its compiles, its checks), then
            # the GPU to itself (other judges' speed runs, and the cases in flight).
            self._waits = {
                "prewarm_wait_seconds": round(t1 - t0, 3),
                "lock_wait_seconds": round(time.monotonic() - t1, 3),
            }
            timeline.add("speed run: wait for the warm-up ahead", t0, t1)
            timeline.add("speed run: wait for the GPU lock", t1, time.monotonic())
            try:
                state = self._timed()
                self._trim(state)
            except BaseException:
                self._close()
                raise
        # The workers live on into _finish, beside other judges' cases and, should another judge's speed run
        # take the GPU first, idle through it (their memory held, no work of theirs running). The timed rounds
        # and the profiler clock are over, and what is left (the output checks, the bench replays, the
        # workers' exit) is correctness work: it runs beside other judges' cases, as theirs do, and the next
        # judge's speed run need not wait for it. Each check and each replay takes the GPU shared for itself,
        # as a case does, not the whole of them at once: held around all of them, they were one more thing in
        # flight for the next judge's speed run to wait for.
        try:
            return self._finish(state, shared=lambda cancel=None: lock.gpu_shared(self.gpu, on_wait=waiting))
        finally:
            self._close()

    @contextlib.contextmanager
    def _timed_region(self):
        """While it holds the GPU's lock exclusively its timed workers use the ledger's timed region
        (judge.gpu_admission): the session's reservation says so, so that their memory is not taken for
        another program's."""
        r = self.reservation
        if r is not None:
            r.set_timing(True)
        try:
            yield
        finally:
            if r is not None:
                r.set_timing(False)

    def _join_prewarm(self) -> None:
        """Wait for the warm-up thread (prewarm), and raise what it raised."""
        if self._prewarm is None:
            return
        if self._prewarm.is_alive():
            self._ahead_cut.set()  # what is not begun of its checks and replays ahead is skipped
            self._phase("warming up (compiling the bench shapes' kernels)")
            self._prewarm.join()
        if self._prewarm_failed is not None:
            raise self._prewarm_failed

    def _phase(self, text: str) -> None:
        self.progress.stage(f"speed run: {text}")

    def _timed(self) -> dict:
        """Start the workers, warm up, time the rounds and the profiler clock: what needs the GPU to itself.
        What _finish needs, with the phases' seconds so far."""
        t_start = time.monotonic()
        n = len(self.config.shapes)
        if self.cuda:
            from judge.timing import ceilings

            self._phase("measuring the GPU's ceilings (once per GPU model)")
            self.planner.ceilings = ceilings.get(torch_index(self.gpu), log=self.log)
        self._phase("starting workers")
        self.workers.start()
        started = time.monotonic()
        plans = []
        for s, p in enumerate(self.config.shapes):
            self._phase(
                f"warming up: shape {s + 1} of {n}"
                if s not in self.planner.warmed
                else f"warming up again on the idle GPU: shape {s + 1} of {n}"
            )
            plans.append(self.planner.plan(s, p))
        warm = time.monotonic()
        rounds, torch_times, stopped = self.measure.rounds(plans, self.score.clamp, since=warm)
        timed = time.monotonic()
        timeline.add("speed run: start the workers", t_start, started)
        timeline.add("speed run: warm-up", started, warm)
        timeline.add("speed run: timed rounds", warm, timed, rounds=len(rounds))
        phases = {
            **self._waits,
            "start_seconds": round(started - t_start, 3),
            "warmup_seconds": round(warm - started, 3),
            "rounds_seconds": round(timed - warm, 3),
        }
        if self._prewarm_seconds is not None:  # the warm-up beside the tests (warmup_seconds: the second one)
            phases["prewarm_seconds"] = self._prewarm_seconds
            phases["prewarmed_shapes"] = len(self.planner.warmed)
        phases.update(self._ahead_phases)  # of the warm-up ahead, its calls' checks and replays
        # (The profiler's requests never replace the timed calls' outputs the checks read.)
        with timeline.span("speed run: profiler clock"):
            self.measure.profile(plans)
        phases["profile_seconds"] = round(time.monotonic() - timed, 3)
        return {"plans": plans, "rounds": rounds, "torch_times": torch_times, "stopped": stopped, "phases": phases}

    def _trim(self, state: dict) -> None:
        """What the checks after the lock need, and nothing more, before the GPU is given back.

        The rounds leave every worker holding gigabytes: input sets, a flush buffer, and in the submission's
        worker the outputs of every call of its last request per shape (its share of TIMED_KEEP_BYTES). Checked outside
        the lock, beside other judges' cases and the next judge's rounds, that much per speed run fills a
        GPU shared by a dozen softmax judges (accepted files then get IE, MLE or RJ from CUDA out-of-memory
        errors: docs/measurements, grading throughput). So the calls to check are drawn here (after the last timed
        request, as before: nothing it timed could know), their outputs and records are fetched now, the trusted
        workers are asked to exit (the profiler clock, their last use, is over), and only then does the
        submission's worker let go of everything it held, the drawn calls' outputs included. Fetched first: a
        worker told to keep some calls and drop the rest learns which are checked while its own code can still
        run (a finalizer on each output runs when it is dropped), and repaired the kept ones from copied inputs
        before they were read (a red-team file did, in the interpreter: wrong timed calls passed)."""
        from judge.channel import request_exits

        t0 = time.monotonic()
        sub = next(c for c in self.workers.contenders if c.name == "submission")
        picked = {
            s: self.verifier.draw(sub.last[s][0].checkable if s in sub.last else ()) for s in range(len(state["plans"]))
        }
        state["picked"] = picked
        with timeline.span("speed run: trim, fetch the drawn calls' outputs"):
            state["fetched"] = {
                s: {call: self.verifier.fetch(sub, s, call) for call in calls} for s, calls in picked.items()
            }
        # Asked to exit, not waited for: their exits (their CUDA contexts going down) run while the GPU is
        # another judge's already; _close waits for them.
        others = [c.client for c in self.workers.contenders if c is not sub]
        request_exits(others)
        self.workers.ended.extend(others)
        with timeline.span("speed run: trim, the submission's worker lets go"):
            request(sub, {"type": "bench_trim", "id": "trim"}, parse=parsers.parse_bench_trimmed)
        state["phases"]["trim_seconds"] = round(time.monotonic() - t0, 3)
        timeline.add("speed run: trim", t0, time.monotonic())

    def _finish(self, state: dict, shared=contextlib.nullcontext) -> dict:
        """The output checks and their replays; the result. ``shared``: held around each check and each replay
        (the GPU taken shared, after the lock)."""
        plans = state["plans"]
        t0 = time.monotonic()
        checked = self.verifier.checks(plans, state.get("picked"), state.get("fetched"), shared=shared)
        phases = {**state["phases"], "check_seconds": round(time.monotonic() - t0, 3)}
        timeline.add("speed run: output checks", t0, time.monotonic())
        replayer = self.workers.replayer
        if replayer is not None:  # the replays of checked timed calls (their time is in check_seconds)
            phases.update(
                {
                    k: (round(v, 3) if isinstance(v, float) else v)
                    for k, v in replayer.timing.items()
                    if k.startswith("replay")
                }
            )
        return result.speed_section(
            self.problem,
            self.config,
            self.score,
            self.measure,
            self.workers.contenders,
            self.notes,
            cuda=self.cuda,
            ceilings=self.planner.ceilings,
            plans=plans,
            rounds=state["rounds"],
            torch_times=state["torch_times"],
            stopped=state["stopped"],
            checked=checked,
            phases=phases,
        )
