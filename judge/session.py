"""One judging run: submission in, Report out. The orchestration, nothing else.

Data flows one way: the intake reads and scans the source (judge.intake);
each group draws its cases (judge.groups, with Hypothesis); a case's inputs
are built by the problem's golden.py and cross to the worker as data
(judge.exchange, judge.case_call); while the worker runs, the judge computes
its own answers (judge.expected); the parsed reply is judged
(judge.judgement, by the rules of judge.rules); the groups' outcomes become a
verdict, the speed run follows on a GPU (judge.timing), and the report is
built. This process never imports the submission.

Its parts, each given what it needs: the groups' loop, drawing and running
each group's cases through this session (judge.group_loop), one case through
a worker (judge.case_call), the replays of passing cases
(judge.session_replays), the speed run spawned ahead and run last
(judge.speed_stage), and the GPU shared with other judges on the host
(judge.gpu_share).
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
import threading
import time
from pathlib import Path

from judge import calls, intake, kernel_store, kit, session_replays, timeline
from judge import progress as progress_words
from judge.case_call import CaseCall
from judge.cases import canonical, derive_seed
from judge.exchange import Exchange, Workers
from judge.gpu_claim import GpuClaim, Refused, handed_over
from judge.gpu_share import GpuShare
from judge.group_loop import NOT_RUN, GroupLoop
from judge.judgement import judge_refill
from judge.lanes import LaneOutcome, Plan
from judge.options import (
    Options,
    limits_for,
    no_speed_run,
    replay_workers,
    session_workers,
    torch_device,
)
from judge.problems import Group, Problem
from judge.progress import NO_PROGRESS
from judge.proofs import Proofs
from judge.sandbox import Job
from judge.speed_stage import SpeedStage
from judge.verdicts import GroupResult, Outcome, Report, Verdict, worst


class Session:
    def __init__(self, problem: Problem, submission: Path, options: Options):
        self.problem = problem
        self.submission = Path(submission)
        self.options = options
        self.limits = limits_for(problem, options)
        self.backend, note = intake.backend_for(options.sandbox, options.device)
        self.notes: list[str] = [note] if note else []
        # The judge computes its answers on the same GPU the worker was given.
        self.golden_device = torch_device(options.gpu) if options.device == "cuda" else "cpu"
        self.workers: Workers | None = None  # the submission's workers; the first runs Hypothesis's shrinking
        self._lock = threading.RLock()  # the case cache and the group's state, shared by the workers' threads
        self.started = 0.0
        self.timing: dict = {}
        self._cache: dict[str, Outcome] = {}  # case key -> outcome (Hypothesis replays cases while shrinking)
        self.frozen = False  # after a worker death or the run's limit, the group's other cases are not run
        self._worker_locks: dict[int, threading.RLock] = {}  # id(worker) -> held by the thread using it
        self.first: dict[str, str] = {}  # group -> its first case (canonical): refilled
        # Every passing case's replay (judge.proofs): run beside the lanes, settled at the group's end.
        self.replays: Proofs | None = None
        self.replay_on = options.replay
        # Live progress (judge.progress): what runs now, reported from whichever thread runs it.
        self.progress = options.progress or NO_PROGRESS
        self.gpu = GpuShare(options, self.golden_device, self.progress)  # beside other judges on the host
        self._case_call = CaseCall(
            problem,
            self.submission.name,
            options,
            golden_device=self.golden_device,
            case_seconds=self.limits.case_seconds,
        )
        self.shrinking = False  # the group's first failure was found: its cases now are Hypothesis's tries
        self.tries = 0  # cases run while shrinking the group's failure
        self._lane_compiling: dict[int, bool] = {}  # lane -> its last reply compiled new kernels (GPU)
        self.speed = SpeedStage(
            problem,
            self.submission,
            options,
            backend=self.backend,
            limits=self.limits,
            progress=self.progress,
            replay=self.replay_on,
            timing=self.timing,
        )
        self.claim: GpuClaim | None = None  # the GPU memory this run reserved (judge.gpu_claim), from run()
        self.groups = GroupLoop(self)  # the groups' cases drawn and run in turn, through run_case and lane_case

    # ------------------------------------------------------------------ entry

    def run(self) -> Report:
        self.started = time.monotonic()
        refusal = intake.check_source(
            self.submission,
            self.options.static_scan,
            entry=self.problem.entry_point,
            arity=self.problem.entry_arity,
            allow=self.problem.scan_allow,
        )
        if refusal is not None:
            return self._report(refusal.verdict, refusal.message, [], refusal.details)
        # The GPU's memory for what this run starts, reserved with every other judge's on the host (judge.gpu_claim):
        # it may wait here for its turn, and it gets as many test workers as fit.
        opts = self.options
        replays = replay_workers(opts.device, opts.interpret, lone=opts.speed_early) if self.replay_on else 0
        self.claim = handed_over(opts) or GpuClaim(
            opts,
            self.limits,
            speed=no_speed_run(self.problem, opts) is None,
            speed_replays=replays,
            progress=self.progress,
        )
        self.claim.progress = self.progress
        try:
            count = self.claim.start(session_workers(self.problem, opts), replays)
        except Refused as exc:
            return self._report(Verdict.IE, f"the GPU cannot hold this judging: {exc}", [])
        try:
            return self._run_admitted(count)
        finally:
            self.claim.release()

    def _run_admitted(self, count: int) -> Report:
        """The run, once its GPU memory is reserved: ``count`` test workers."""
        scratch = Path(tempfile.mkdtemp(prefix="judge-run-"))
        job = Job(
            submission=self.submission,
            scratch=scratch,
            device=self.options.device,
            interpret=self.options.interpret,
            limits=self.limits,
            gpu=self.options.gpu,
            cache=intake.kernel_cache(self.submission, self.options.device, self.options.interpret),
        )
        kernel_store.prune_in_background(job.cache)  # other files' kernels, within the disk's budget
        self.workers = Workers(self.problem, job, self.backend, threads=self.options.threads, count=count)
        if self.replay_on:
            self.replays = session_replays.start(
                self.problem,
                job,
                self.backend,
                self.options,
                golden_device=self.golden_device,
                time_left=self._time_left,
                run_seconds=self.limits.run_seconds,
            )
        workers = len(self.workers.all)
        self.progress.stage(f"{progress_words.STARTING} ({workers})" if workers > 1 else progress_words.STARTING)
        warm = self.gpu.warm(self.claim)
        try:
            if self.options.speed_early:
                # A lone submit on a GPU: the speed run's workers start, and warm up, beside the first group too.
                # A submission that then fails costs their start, on a machine that had nothing else to do.
                self.speed.prestart(scratch, self.claim)
            t_start = time.monotonic()
            failure = self.workers.start()
            # What this submission waited for its first worker (spawned, or handed over by judge.pool).
            self.timing["start_wait_seconds"] = round(time.monotonic() - t_start, 3)
            timeline.add("wait for the first worker", t_start, time.monotonic())
            if failure is not None:
                return self._report(failure.verdict, failure.message, [], failure.details)
            groups_started = time.monotonic()
            groups = self.groups.run(scratch)
            loading = self.workers.load_failure()  # (another worker could not load the file)
            if loading is not None:
                return self._report(loading.verdict, f"in one of its workers: {loading.message}", [], loading.details)
            verdict = worst(g.verdict for g in groups)
            message = next(
                (f"{g.name}: {g.message}" for g in groups if g.verdict is verdict and not g.passed), "all tests passed"
            )
            self.timing["tests_seconds"] = round(time.monotonic() - groups_started, 3)
            if self.gpu.wait_seconds:
                self.timing["gpu_wait_seconds"] = round(self.gpu.wait_seconds, 3)  # for others' speed runs
            speed, failed = self.speed.run(verdict, scratch, self.claim, self._stop_tests)
            if failed is not None:
                verdict, message = failed
            return self._report(verdict, message, groups, speed=speed)
        finally:
            self.speed.close()
            self.gpu.end(warm, self.claim)
            self.progress.stage("stopping workers")
            if self.replays is not None:
                self.replays.shutdown()
                self.replays.replayer.release()  # asks it to exit now; closed for good below, after the workers
            self.workers.stop()
            if self.replays is not None:
                self.replays.replayer.close()
            shutil.rmtree(scratch, ignore_errors=True)
            kernel_store.drop_if_oversized(job.cache)  # a file that wrote into its cache, not compiled

    # ------------------------------------------------------------------ cases

    def run_case(self, group: Group, params: dict) -> Outcome:
        """The outcome of one case Hypothesis asks for, in the judge's thread: from the cache when it already
        ran (the lanes ran the group's cases ahead, and Hypothesis asks again while shrinking), else run on
        the first worker."""
        key = f"{group.name}|{canonical(params)}"
        with self._lock:
            if key in self._cache:
                outcome = self._cache[key]
                self.frozen = self.frozen or _freezes(outcome)
                return outcome
            if self.frozen:
                # A worker died (or the run's time ran out) on an earlier case of
                # this group; shrinking further would cost a full limit per try.
                return Outcome(Verdict.AC, NOT_RUN)
        # (A case asked for while shrinking is one of Hypothesis's tries at a smaller failure: the group has
        # failed already, so it is not replayed.)
        outcome = self._run_new(group, params, self.workers.first, replay=not self.shrinking)
        with self._lock:
            self.frozen = self.frozen or _freezes(outcome)
            shrinking = self.shrinking
            if shrinking:
                self.tries += 1
        if not shrinking:
            self.progress.case_done()
        return outcome

    def lane_case(self, plan: Plan, i: int, ex: Exchange) -> LaneOutcome:
        """Case ``i`` of a group's plan, run by a lane on its worker ``ex`` (judge.lanes), into the cache."""
        params = plan.cases[i]
        with self._lock:
            cached = self._cache.get(f"{plan.group.name}|{canonical(params)}")
        if cached is not None:  # (a case drawn twice)
            return LaneOutcome(cached.passed, _freezes(cached), counted=False)
        outcome = self._run_new(plan.group, params, ex)
        return LaneOutcome(outcome.passed, _freezes(outcome), counted=True)

    def _run_new(self, group: Group, params: dict, ex: Exchange, replay: bool = True) -> Outcome:
        """Run a case on worker ``ex`` (the run's time limit permitting) and cache its outcome; a passing one's
        replay starts (``replay``)."""
        if self._time_left() < 0:
            outcome = self._run_limit()
        else:
            outcome = self._execute(group, params, ex, replay)
        with self._lock:
            self._cache[f"{group.name}|{canonical(params)}"] = outcome
        return outcome

    def _holding(self, ex: Exchange):
        """Worker ``ex`` for one thread: a case and its refill, a replay's run again, a finding's case. The
        judge's thread (shrinking, the replays settled at a group's end) uses the first worker while the
        lanes may be running the next group's cases on it."""
        with self._lock:
            return self._worker_locks.setdefault(id(ex), threading.RLock())

    def _time_left(self) -> float:
        """Seconds left of the run's limit (waits for other judges, their speed runs on the GPU and their GPU
        memory, are not the run's time)."""
        waited = self.gpu.wait_seconds + (self.claim.waited_seconds if self.claim is not None else 0.0)
        return self.limits.run_seconds - (time.monotonic() - self.started - waited)

    def _run_limit(self) -> Outcome:
        return Outcome(Verdict.TLE, f"the whole run exceeded its limit of {self.limits.run_seconds:g} s")

    def _execute(self, group: Group, params: dict, ex: Exchange, replay: bool = True) -> Outcome:
        with self._holding(ex):
            return self._execute_held(group, params, ex, replay)

    def _execute_held(self, group: Group, params: dict, ex: Exchange, replay: bool = True) -> Outcome:
        if not ex.alive:
            failure = ex.start()
            if failure is not None:
                return failure
        outcome, got, input_bytes, last = self._call(ex, "case", params, group=group)
        if not outcome.passed:
            return outcome
        if self._wants_refill(group, params):
            # The same input memory with new values: the answer must change with it.
            params2 = dict(params, seed=derive_seed("refill", params["seed"]))
            outcome2, got2, _, _ = self._call(ex, "refill", params2, input_bytes, group=group)
            outcome = judge_refill(got, (outcome2, got2)) or outcome
        if self.replays is not None and outcome.passed and last is not None and replay:
            replayable = calls.replayed(self.problem, group, self.options.interpret)
            if not replayable:
                with self._lock:
                    if calls.NOT_REPLAYED not in self.notes:
                        self.notes.append(calls.NOT_REPLAYED)
            self.replays.passed(group.name, params, last, replayable, self.gpu.shared)
        return outcome

    def settle_replays(self, group: Group, order: dict, failed_at: int | None) -> tuple[dict, Outcome] | None:
        """The group's replays (judge.session_replays.settle): the first finding before its first failing case,
        as (params, outcome), or None."""
        if self.replays is None:
            return None
        found, seconds = session_replays.settle(
            self.replays,
            group,
            order,
            failed_at,
            in_first_worker=self._in_first_worker,
            progress=self.progress,
            call=lambda ex, params, group: self._call(ex, "case", params, group=group),
        )
        # What the test groups waited, after their cases, for their replays to come back.
        self.timing["replay_settle_seconds"] = round(self.timing.get("replay_settle_seconds", 0.0) + seconds, 3)
        return found

    def _in_first_worker(self, work):
        """``work(ex)`` on the first worker, held for it and started again if it died, the run's limit permitting;
        else the Outcome that stopped it (the run's limit, the worker's start)."""
        if self._time_left() < 0:
            return self._run_limit()
        ex = self.workers.first
        with self._holding(ex):
            failure = ex.start() if not ex.alive else None
            return failure or work(ex)

    def _lane_of(self, ex: Exchange) -> int:
        return next((i for i, lane in enumerate(self.workers.all) if lane is ex), 0)

    def _phase_of(self, lane: int) -> tuple[str, str]:
        """(phase, detail) of a case about to run on ``lane``: a try while shrinking a failure, else a compiling
        case on a GPU (the lane's first, or one after a case that compiled new kernels), else testing."""
        if self.shrinking:
            return progress_words.SHRINKING, f"try {self.tries + 1}"
        if self.options.device == "cuda" and not self.options.interpret and self._lane_compiling.get(lane, True):
            return progress_words.COMPILING, ""
        return progress_words.TESTING, ""

    def _call(self, ex: Exchange, kind: str, params: dict, input_bytes: int | None = None, *, group: Group):
        """Build the case's inputs, send them to worker ``ex``, compute the expected answers meanwhile, judge
        the reply.

        (Outcome, the returned tensors or None, the inputs' size in bytes, (inputs, reply) of a passing case
        for the replay or None).
        """
        lane = self._lane_of(ex)
        self.progress.lane(lane, *self._phase_of(lane))
        compiled = ex.timing["kernels_compiled"]
        try:
            with self.gpu.shared():
                return self._case_call(ex, kind, params, input_bytes, group, lane)
        finally:
            self.progress.lane(lane, None)
            self._lane_compiling[lane] = ex.timing["kernels_compiled"] > compiled
            if self._lane_compiling[lane] and len(self.workers.all) > 1:
                self.workers.share_compiles(ex)  # before this lane's next case: its siblings load, not compile
            if ex.timing["kernels_compiled"]:
                self.progress.kernels(sum(x.timing["kernels_compiled"] for x in self.workers.all))
            # A case's inputs and float64 answers, cached by PyTorch's allocator past the case, were the other
            # jobs' memory: 16 softmax judges on one H100 held 0.6-5.5 GiB each, and accepted files failed out of
            # memory beside them (tests/gpu/RESULTS.md, 2026-12-06, ninth session).
            kit.release_after_case()

    def _wants_refill(self, group: Group, params: dict) -> bool:
        """The group's first case (when it passes), and one case in eight: decided by the case alone, so
        that the same cases are refilled whichever worker runs them, in whatever order."""
        if self.first.get(group.name) == canonical(params):
            return True
        return derive_seed("refill?", canonical(params)) % 8 == 0

    def _stop_tests(self) -> None:
        """The test workers stopped for the speed run, and the replay workers with them."""
        if self.replays is not None:
            self.replays.replayer.release()  # asked to exit now, beside the workers' exits; reaped below
        self.workers.stop()
        if self.replays is not None:
            self.replays.replayer.stop()

    # ------------------------------------------------------------------ report

    def _report(
        self, verdict: Verdict, message: str, groups: list[GroupResult], details=None, speed: dict | None = None
    ) -> Report:
        if not groups:
            groups = [
                GroupResult(g.name, g.about, g.points, False, 0, verdict, skipped="not run: " + message)
                for g in self.groups.selected()
            ]
        notes = list(self.notes) + (self.replays.notes if self.replays is not None else [])
        caveat = self.backend.caveat()
        if caveat:
            notes.append(caveat)
        data = self.submission.read_bytes() if self.submission.is_file() else b""
        ex = self.workers.first if self.workers else None
        timing = {
            **(self.workers.timing() if self.workers else {}),
            **(self.replays.replayer.timing if self.replays else {}),
            **(self.replays.tally if self.replays else {}),
            **self.timing,
        }
        if self.claim is not None and self.claim.waited_seconds:
            timing["gpu_admission_wait_seconds"] = self.claim.waited_seconds  # for other judges' GPU memory
        return Report(
            problem={"id": self.problem.id, "slug": self.problem.slug, "title": self.problem.title},
            submission={"path": str(self.submission), "sha256": hashlib.sha256(data).hexdigest()},
            mode={
                "device": self.options.device,
                "interpret": self.options.interpret,
                "sandbox": self.backend.name,
                "quick": self.options.quick,
            },
            seed=self.options.seed,
            verdict=verdict,
            message=message,
            groups=groups,
            notes=notes,
            max_score=100.0,
            speed=speed
            or {
                "scored": False,
                "points": 0,
                "max_points": self.problem.speed_points,
                "reason": f"not measured: {verdict.value} before the speed run",
            },
            elapsed_seconds=time.monotonic() - self.started,
            timing={k: round(v, 3) if isinstance(v, float) else v for k, v in timing.items()},
            worker=ex.info if ex else {},
            output=self.workers.output_text() if self.workers else "",
            details=details or {},
        )


def _freezes(outcome: Outcome) -> bool:
    """A case after which a group's other cases are not run: a worker death or the run's time limit."""
    return outcome.verdict is Verdict.TLE or bool(outcome.details.get("worker_died"))
