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
import dataclasses
import math
import secrets
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from judge import calls as call_modes, gpu_budget, intake, replies, rules, timeline
from judge.options import torch_device, torch_index
from judge.progress import NO_PROGRESS
from judge.shared import bench_inputs
from judge.timing import checks, stats
from judge.timing.score import SpeedScore

SAMPLE_TARGET = 100e-6  # seconds of GPU work a timed sample should hold: shorter calls are batched K to a sample
MAX_PER_SAMPLE = 64
KEEP_BYTES = 4 << 30  # output bytes a worker's reply may carry (a request's held outputs, fetched for a check)
CLOCK = ("CUDA events around samples of K calls queued behind a spin kernel before the clock starts "
         "(a sample the GPU started before the host had queued it all is redone with a longer hold), "
         "less the median of the empty sequence, over K; a sample of K > 1 calls is one CUDA graph of them, "
         "replayed; beside it the CUDA profiler's kernel records")
NOT_A_CLAIM = ("interpreter mode: times are time.perf_counter around the interpreter on the CPU, "
               "a test of the protocol, not a speed claim")


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
    stop = stats.StopRule(ci_target=float(spec.get("ci_target", 0.01)), min_rounds=int(spec.get("min_rounds", 3)),
                          max_rounds=int(spec.get("max_rounds", 30)),
                          budget_seconds=float(spec.get("budget_seconds", 20.0)))
    return BenchConfig(shapes=[dict(s) for s in shapes], stop=stop,
                       request_seconds=float(spec.get("request_seconds", 0.02)),
                       torch_baseline=bool(spec.get("torch_baseline", True)))


class _BaselineLost(Exception):
    """The PyTorch baseline failed: the report goes on without it (it carries no points)."""


class BenchFailed(Exception):
    """The speed run ended the judging: verdict (a code) and a one-line reason."""

    def __init__(self, verdict: str, message: str, details: dict | None = None):
        super().__init__(message)
        self.verdict = verdict
        self.message = message
        self.details = details or {}


@dataclass
class Contender:
    name: str  # "submission", "reference", "pytorch"
    client: object  # judge.channel.WorkerChannel
    trusted: bool
    timeout: float
    last: dict = field(default_factory=dict)  # shape -> (reply, seed) of the last request


def _shape_label(params: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())


class SpeedRun:
    """One speed run; ``run()`` returns the report's speed section (a dict) or raises BenchFailed."""

    def __init__(self, problem, submission: Path, *, device: str, interpret: bool, gpu: int | None,
                 backend, limits, scratch: Path, config: BenchConfig, log=None, progress=None, replay: bool = True,
                 replay_workers: int = 1):
        self.problem = problem
        self.submission = Path(submission)
        self.device = device
        self.cuda = device == "cuda" and not interpret
        self.interpret = interpret
        self.gpu = gpu or 0
        self.backend = backend
        self.limits = limits
        self.scratch = Path(scratch)
        self.config = config
        self.log = log or (lambda m: None)
        self.progress = progress or NO_PROGRESS  # judge.progress: the phase, shape and round now
        self.contenders: list[Contender] = []
        self.notes: list[str] = []
        self.ceilings: dict = {}
        self.clock: dict = {}  # (contender, shape) -> the clock's bookkeeping (see _clock_notes)
        self.holds: dict = {}  # shape -> the longest hold any contender needed: every contender's minimum
        self.profiles: dict = {}  # (contender, shape) -> the profiler clock's summary (see _profiles)
        self.host_gaps: dict = {}  # (contender, shape) -> its first "host clock far ahead of the events"
        self.score = SpeedScore.from_spec(problem.spec.get("score", {}), problem.speed_points)
        # The replay check of the timed calls whose outputs are checked (judge.replay): a second sandboxed
        # process that never imports the submission.
        self.replay = replay
        # How many: each replays one checked call at a time (judge.options.replay_workers: three for a lone
        # submit on a GPU host of 12 cores or more, else two). With one, the timed calls' replays after the rounds ran one after another while
        # the report waited: softmax's reference on the H200 spent 2.0 s there (0.75, 0.29, 0.73 and 0.06 s),
        # flash-backward's 3.9-4.0 s (tests/gpu/RESULTS.md, 2026-12-05 sixth session, call 1).
        self.replay_workers = max(1, int(replay_workers))
        self.replayer = None
        self.replay_timing: dict = {}
        # The judge's own work for the output checks and for the replays beside them (judge.replay.Replayer):
        # one at a time (see _checks).
        self._compute = threading.Lock()
        self._spawned: list | None = None  # (name, channel, entry, trusted) spawned, not greeted yet
        self._spawn_failed: Exception | None = None
        self._moving = threading.Lock()  # _spawned -> contenders (the warm-up thread) against _close
        # The warm-up ahead of the lock (prewarm): a thread, what it found per shape, and what it raised.
        self._prewarm: threading.Thread | None = None
        self._warm: set[int] = set()  # the shapes it warmed up
        self._prewarm_failed: BaseException | None = None
        self._prewarm_seconds: float | None = None
        # The warm-up's checks ahead of the lock (_check_ahead): the submission's held warm-up request per shape
        # (its reply and seed), the judge's seconds on its output checks, and the replays' count and seconds.
        self._warm_held: dict[int, tuple] = {}
        self._ahead_check_seconds = 0.0
        self._ahead_phases: dict = {}
        self._ahead_replays: _Replays | None = None
        # Set once run() waits for the warm-up ahead: the checks and replays ahead not yet begun are skipped
        # (ahead_cut). Their purpose was to get work done beside the tests; once the tests are over and the
        # run waits for them, they are the run's wait instead: vector add's reference on the H200 waited 5.3 s
        # for its checks and replays ahead of shapes 2-4 (tests/gpu/RESULTS.md, 2026-12-05 sixth session).
        # Skipped, the timed calls are checked and replayed after the rounds as always, and a replay compiles
        # what it lacks in its compile pass (judge.replay.Replayer.precompile).
        self._ahead_cut = threading.Event()
        self._ahead_skipped = {"checks": 0, "replays": 0}
        self._stopping = threading.Event()
        self._waits: dict = {}  # run()'s waits before the timed work (on a GPU)
        self.close_seconds = 0.0  # what _close waited for: the workers' exits
        self._ended: list = []  # the trusted workers' channels, asked to exit before the checks (_trim)
        self.reservation = None  # the session's GPU reservation (judge.gpu_admission), told when it times

    # ------------------------------------------------------------------ workers

    def spawn(self) -> None:
        """Spawn the workers (the submission's, the reference's, PyTorch's and the replay worker) and return:
        they import torch and Triton and make their CUDA contexts while the judge goes on (a session calls
        this while its later test groups run; run() greets them). Idempotent; what fails here is raised by
        run(). Nothing here touches the GPU lock: a worker's start is not timed work."""
        if self._spawned is not None:
            return
        self._spawned = []
        try:
            self._spawn()
        except Exception as exc:  # noqa: BLE001 - raised by run(), where a speed run's failure belongs
            self._spawn_failed = exc

    def prewarm(self, shared=None) -> None:
        """Greet the spawned workers and warm every shape up (:meth:`_warm_up`) in a thread of its own, while the
        session's later test groups run; return at once.

        A warm-up call compiles the kernels of the bench shapes, autotunes and runs under the full watch: work a
        correctness case does, not timed work. Done here it overlaps the tests (on a GPU after a warm kernel
        cache, 1.6 s of softmax's speed run alone, 4-5 s of it beside other judges' cases; tests/gpu/RESULTS.md,
        2026-12-03) and no longer holds the GPU to itself: each warm-up request takes the GPU shared, as a
        case does (``shared``: a context manager factory taking ``cancel``, an event that ends its wait, as
        judge.timing.lock.gpu_shared does: discard() sets it). run() waits for it
        before it takes the lock, then warms each shape up again (:meth:`_plan`), now without compiles: the
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
                if self._spawn_failed is not None:
                    return  # run() raises it
                with timeline.span("speed run: start the workers (ahead)"):
                    self._start()
                ahead = checks_ahead(self.cuda)
                with _Replays(self, what="warm-up call", shared=shared) as replays:
                    self._ahead_replays = replays  # (discard() cancels what it has not begun)
                    for s, params in enumerate(self.config.shapes):
                        if self._stopping.is_set():
                            return

                        def warm(s=s, params=params) -> None:
                            with shared(), timeline.span(f"speed run: warm-up ahead, shape {s + 1}"):
                                self._warm_up(s, params, keep=ahead)

                        # (A warm-up's failure comes after an earlier shape's replay finding, as in turn.)
                        replays.guarded(warm)
                        self._warm.add(s)
                        if ahead and self._ahead_cut.is_set():
                            self._ahead_skipped["checks"] += 1
                            self._warm_held.pop(s, None)
                        elif ahead:
                            with timeline.span(f"speed run: check ahead, shape {s + 1}"):
                                self._check_ahead(s, params, replays, shared)
                    with timeline.span("speed run: settle the replays ahead"):
                        replays.settle()
                if ahead:  # the figures of the checks ahead, for the phases (the replays': the worker's so far)
                    self._ahead_phases = {"ahead_check_seconds": round(self._ahead_check_seconds, 3)}
                    if any(self._ahead_skipped.values()):
                        self._ahead_phases.update(ahead_checks_skipped=self._ahead_skipped["checks"],
                                                  ahead_replays_skipped=self._ahead_skipped["replays"])
                    if self.replayer is not None:
                        self._ahead_phases.update(ahead_replays=self.replayer.timing["replays"],
                                                  ahead_replay_seconds=round(self.replayer.timing["replay_seconds"], 3))
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
        the lock behind other judges' speed runs: with 12 softmax jobs on the H200, the waiting ones' workers
        held a bench set each while the GPU ran out of memory (tests/gpu/RESULTS.md, 2026-12-05 second
        session, call 2)."""
        for c in self.contenders:
            if self._stopping.is_set():
                return
            with shared():
                self._request(c, {"type": "bench_trim", "id": "warm-trim"}, parse=replies.parse_bench_trimmed)

    def _check_ahead(self, s: int, params: dict, replays: "_Replays", shared) -> None:
        """Check a call of the warm-up ahead of the lock (its outputs, then its replay, queued), as a timed call's
        is checked after the rounds (:meth:`_check`, :meth:`_replay`: the same rules), with the GPU taken
        shared.

        Its purpose is the replay worker's compiles: the replays after timing run the bench shapes' kernels,
        which the replay worker, compiling from the file's source into a cache of its own, had not compiled
        (the tests' shapes are other specializations). Cold, they made most of the checks after the rounds:
        16.4 s of 98's speed run, 7.7 s of 97's, 3.9 s of 94's on the H200 (tests/gpu/RESULTS.md, 2026-12-04
        call 2). Here they run beside the session's later test groups, and the warm-up call is checked
        besides. A finding is the speed run's, raised by run()."""
        held = self._warm_held.pop(s, None)
        if held is None:
            return
        specs = self.problem.golden.bench_args(dict(params))
        t0 = time.monotonic()
        picked = replays.guarded(lambda: self._check(s, specs, held, what="warm-up call", shared=shared))
        self._ahead_check_seconds += time.monotonic() - t0
        for call, answer in picked:
            replays.queue(s, specs, call, answer)

    def _spawn(self) -> None:
        from judge.sandbox import Job
        from judge.sandbox.process import ProcessBackend
        from judge.timing.ceilings import cache_dir
        from judge.channel import WorkerChannel

        trusted_root = cache_dir() / "workers"
        plan = [("submission", self.backend, self.submission, self.problem.entry_point, self.scratch, False)]
        ref = self.problem.reference_path
        if not ref.is_file():
            raise BenchFailed("IE", f"no reference solution at {ref}: nothing to compare the speed with")
        plan.append(("reference", ProcessBackend(), ref, self.problem.entry_point,
                     trusted_root / f"{self.problem.directory.name}-reference", True))
        if self.config.torch_baseline and callable(getattr(self.problem.golden, "pytorch", None)):
            plan.append(("pytorch", ProcessBackend(), self.problem.directory / "golden.py", "pytorch",
                         trusted_root / f"{self.problem.directory.name}-pytorch", True))
        started = self._spawned
        # Every timed worker holds input sets and outputs over the shapes and a flush buffer besides the call
        # itself: judge.gpu_budget.TIMED_EXTRA_BYTES more than a correctness worker, the plan keeping to it
        # (_plan). The trusted ones are capped the same, so that what the judge reserved for the speed run
        # (judge.gpu_admission) is what its workers can take.
        timed_limits = self.limits
        if self.limits.gpu_memory_mb:
            timed_limits = dataclasses.replace(self.limits, gpu_memory_mb=gpu_budget.timed_cap_mb(self.limits))
        for name, backend, path, entry, scratch, trusted in plan:
            scratch.mkdir(parents=True, exist_ok=True)
            # The submission's worker finds the kernels its correctness workers compiled (the same bytes,
            # judge.intake.kernel_cache); the trusted workers keep theirs in their own scratch.
            cache = intake.kernel_cache(path, self.device, self.interpret) if not trusted else None
            limits = timed_limits
            job = Job(submission=path, scratch=scratch, device=self.device, interpret=self.interpret,
                      limits=limits, gpu=self.gpu if self.device == "cuda" else None, cache=cache)
            started.append((name, WorkerChannel(backend, job), entry, trusted))  # spawned: they start in parallel
            if name == "submission" and self.replay:
                from judge.replay import Replayer, Replayers

                golden = torch_device(self.gpu) if self.device == "cuda" else "cpu"
                members = [Replayer(self.problem, dataclasses.replace(job, limits=self.limits), self.backend,
                                    threads=1, golden_device=golden, compute_lock=self._compute)
                           for _ in range(self.replay_workers)]
                self.replayer = members[0] if len(members) == 1 else Replayers(members)
                # Started with the contenders (its start overlaps theirs) and waited for with them (below), so
                # that its start, and on a GPU its CUDA context, is over before the first timed sample; it
                # waits idle until the checks after timing.
                self.replayer.prestart()

    def _start(self) -> None:
        from judge.channel import WorkerDied, WorkerStartFailed

        self.spawn()
        if self._spawn_failed is not None:
            raise self._spawn_failed
        while True:
            with self._moving:
                if not self._spawned or self._stopping.is_set():
                    break
                name, client, entry, trusted = self._spawned.pop(0)
                self.contenders.append(Contender(name, client, trusted, self.limits.case_seconds))
            who = "the submission" if name == "submission" else f"the {name} worker"
            try:
                # A factory problem's submission and reference register their operator first (judge.calls).
                own = entry == self.problem.entry_point
                setup = call_modes.worker_setup(self.problem, self.interpret) if own else None
                hello = client.start(submission_entry=entry, arity=self.problem.arity, threads=1, calls=setup)
            except WorkerStartFailed as exc:
                raise BenchFailed("IE", str(exc)) from None
            except WorkerDied as died:
                verdict = rules.death_verdict(died.reason).value if not trusted else "IE"
                raise BenchFailed(verdict, f"{who} did not load: {died.detail}") from None
            if not hello.ok:
                err = hello.error
                verdict = rules.error_verdict(err.category).value if not trusted else "IE"
                raise BenchFailed(verdict, f"{who} did not load: {err.type}: {err.message[:300]}")
        if self.replayer is not None and not self._stopping.is_set():
            self.replayer.wait_ready()

    def _drop_baseline(self, lost: Exception) -> None:
        for c in [c for c in self.contenders if c.name == "pytorch"]:
            self.contenders.remove(c)
            try:
                c.client.close()
            except Exception:  # noqa: BLE001
                pass
        self.notes.append(f"the PyTorch baseline failed and was left out: {str(lost)[:300]}")

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
        self.contenders = []  # closed: nothing of this run is left to time

    def _close(self) -> None:
        from judge.channel import request_exits

        # The contenders, and any worker spawned but never greeted (a session whose tests failed).
        with self._moving:
            clients = [c.client for c in self.contenders] + [client for _, client, _, _ in self._spawned or []]
            self._spawned = []
        t0 = time.monotonic()
        request_exits(clients)
        for client in clients:
            try:
                client.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass
        if self.replayer is not None:
            self.replay_timing = dict(self.replayer.timing)
            self.replayer.close()
            self.replayer = None
        self.close_seconds += time.monotonic() - t0

    def _request(self, c: Contender, message: dict, parse=replies.parse_bench_reply):
        """Send one request; (the parsed reply, judge's wall seconds). Deaths and errors become BenchFailed."""
        from judge.channel import WorkerDied

        t0 = time.perf_counter()
        try:
            c.client.send_case(message, [])
            reply = c.client.receive(parse, timeout=c.timeout, max_bytes=KEEP_BYTES + (1 << 20))
        except WorkerDied as died:
            if c.name == "pytorch":
                raise _BaselineLost(died.detail) from None
            if c.trusted:
                raise BenchFailed("IE", f"the {c.name} worker died while timed: {died.detail}") from None
            raise BenchFailed(rules.death_verdict(died.reason).value, f"while timed: {died.detail}") from None
        wall = time.perf_counter() - t0
        if isinstance(reply, replies.BenchError):
            err = reply.error
            first = err.message.strip().splitlines()[0][:300] if err.message.strip() else ""
            text = f"{err.type}: {first}"
            if c.name == "pytorch":
                raise _BaselineLost(text)
            if c.trusted:
                raise BenchFailed("IE", f"the {c.name} worker failed while timed: {text}")
            raise BenchFailed(rules.error_verdict(err.category).value, f"while timed: {text}",
                              {"error": err.as_dict()})
        return reply, wall

    # ------------------------------------------------------------------ one shape

    def _warm_up(self, s: int, params: dict, *, retune: bool = False, keep: bool = False) -> tuple[dict, int]:
        """Every worker's warm-up on shape s: one untimed call under the full watch (it compiles, autotunes, and
        its evidence goes through the rulebook) and two timed samples. (Each contender's pace, the submission's
        output bytes.) ``retune``: each worker first forgets the configs its autotuners chose (they were timed
        beside other work, by the warm-up ahead of the lock: judge.untrusted.guard.forget_tuning), so that the
        call tunes them again on the GPU held alone; the compiled kernels stay. ``keep``: the submission's
        worker holds its samples' outputs and records, to be checked (_check_ahead)."""
        specs = self.problem.golden.bench_args(dict(params))
        flush = 2 * int(self._l2())
        estimates, out_bytes = {}, 0
        for c in list(self.contenders):
            if self._stopping.is_set():
                break
            held = keep and c.name == "submission"
            msg = {"type": "bench", "id": f"{s}-warmup", "shape": s, "args": specs, "samples": 2, "per_sample": 1,
                   "seed": secrets.randbits(62), "sets": 1, "flush_bytes": flush, "keep": held, "watch": True,
                   "retune": retune, "prepare": c.name == "pytorch",
                   "trace": self.replayer is not None and c.name != "pytorch"}
            try:
                reply, _ = self._request(c, msg)
            except _BaselineLost as lost:
                self._drop_baseline(lost)
                continue
            if c.name == "submission":
                self._rule_checks(reply, params, warmup=True)
                out_bytes = reply.out_bytes
                if held:
                    self._warm_held[s] = (reply, msg["seed"])
            net = _net_times(reply)
            if net:
                estimates[c.name] = stats.median(net)
        return estimates, out_bytes

    def _l2(self) -> int:
        """The GPU's L2 bytes (the flush between samples is twice that): the device's own figure, the one the
        ceilings record, read without measuring them (the warm-up ahead of the lock must not: they are
        measured on the GPU held alone, in _timed)."""
        if not self.cuda:
            return 0
        if self.ceilings:
            return int(self.ceilings.get("l2_bytes", 0))
        import torch

        return int(getattr(torch.cuda.get_device_properties(torch_index(self.gpu)), "L2_cache_size", 0) or 0)

    def _plan(self, s: int, params: dict) -> dict:
        """Warm every worker up on shape s (one watched call each; when prewarmed, again, compiled now, on the GPU
        held alone: the rulebook, the autotuners' choices and the paces from there) and choose how to time it.

        One plan per shape, the same for every contender: K calls per sample
        (enough for the fastest contender's sample to hold ``sample_target`` of
        GPU work), how many samples per request, how many input sets, the flush.
        """
        golden = self.problem.golden
        specs = golden.bench_args(dict(params))
        set_bytes = max(1, bench_inputs.nbytes(specs))
        # Each shape's share of what a timed worker may hold (judge.gpu_budget): the plan keeps to it, so the
        # memory the judge reserved for the speed run is enough whatever the shapes.
        shapes = max(1, len(self.config.shapes))
        set_budget, keep_budget = gpu_budget.TIMED_SETS_BYTES // shapes, gpu_budget.TIMED_KEEP_BYTES // shapes
        l2 = self._l2()
        # Warmed up ahead, beside other judges' cases: what was timed then (the paces, an autotuner's choice) says
        # little about the GPU alone, so the warm-up runs again here; its compiles are done.
        estimates, out_bytes = self._warm_up(s, params, retune=s in self._warm)
        timed = [estimates[n] for n in ("submission", "reference") if n in estimates]
        slow = max(timed) if timed else 1e-3
        fast = min(estimates.values()) if estimates else slow
        per_sample = 1
        if self.cuda:
            per_sample = choose_per_sample(fast, target=self.config.sample_target,
                                           max_k=self.config.max_per_sample, set_bytes=set_bytes,
                                           set_budget=set_budget)
        samples = math.ceil(self.config.request_seconds / max(per_sample * slow, 1e-7))
        samples = min(self.config.max_calls, max(self.config.min_calls, samples))
        if per_sample > 1:
            # Such a sample averages K calls already, and costs K fills and a hold of about K launches.
            samples = min(samples, self.config.max_batched_samples)
        if out_bytes:
            samples = max(3, min(samples, keep_budget // (out_bytes * per_sample)))
        if per_sample > 1:
            sets = per_sample
        else:
            sets = 2 if not l2 else min(8, max(2, math.ceil(2 * l2 / set_bytes)))
            sets = max(1, min(sets, set_budget // set_bytes))
        if not self.cuda:
            samples = min(samples, 5)
        plan = {"specs": specs, "mode": "events" if self.cuda else "cpu", "set_bytes": set_bytes,
                "flush_bytes": 2 * l2, "per_sample": int(per_sample), "calls": int(samples), "sets": int(sets),
                "estimates": estimates, "graph": {}}
        if self.cuda and per_sample > 1 and self.config.graphs:
            self._graph_probe(s, params, plan)
        return plan

    def _graph_probe(self, s: int, params: dict, plan: dict) -> None:
        """Can each contender's K calls be captured into a CUDA graph? Sets plan["graph"] and plan["mode"].

        A launch-bound call (K > 1) is timed by replaying a graph of the
        sample's calls: launched from a stream, the GPU's gap between
        back-to-back kernels differed by up to 5.5% between identical processes
        on the H200, replayed from a graph by 0.3-0.7% (tests/bench/launch_gaps.py).
        The submission and the reference are timed the same way: if either
        cannot be captured, both are timed from the stream (a note says why).
        The PyTorch baseline goes its own way (it earns no points).
        """
        verdicts = {}
        for c in list(self.contenders):
            msg = {"type": "bench", "id": f"{s}-graph", "shape": s, "args": plan["specs"], "samples": 1,
                   "per_sample": plan["per_sample"], "seed": secrets.randbits(62), "sets": plan["sets"],
                   "flush_bytes": plan["flush_bytes"], "keep": False, "prepare": c.name == "pytorch",
                   "graph": True, "trace": self.replayer is not None and c.name != "pytorch"}  # as timed: recorded
            try:
                reply, _ = self._request(c, msg)
            except _BaselineLost as lost:
                self._drop_baseline(lost)
                continue
            if c.name == "submission":
                self._rule_checks(reply, params, warmup=False)
            verdicts[c.name] = reply.mode == "graph"
            if not verdicts[c.name] and reply.note and c.name != "pytorch":
                self._note(f"{c.name} at {_shape_label(params)}: {reply.note}")
        plan["graph"] = graph_plan(verdicts)
        if plan["graph"].get("submission"):
            plan["mode"] = "graph"

    def _time(self, c: Contender, s: int, plan: dict) -> tuple[list[float], dict]:
        # Every contender keeps its outputs until the next request, not only the
        # submission (whose outputs the judge may check): a worker that frees them
        # writes each sample's outputs into the memory of the last one, and on the
        # H200 that alone moved a 2 us call by 5-8% against an identical copy.
        seed = secrets.randbits(62)
        msg = {"type": "bench", "id": f"{s}", "shape": s, "args": plan["specs"], "samples": plan["calls"],
               "per_sample": plan["per_sample"], "seed": seed, "sets": plan["sets"],
               "flush_bytes": plan["flush_bytes"], "keep": True, "prepare": c.name == "pytorch",
               "min_hold": self.holds.get(s, 0.0), "graph": plan["graph"].get(c.name, False),
               # The submission and the reference record their timed calls (the same host work around the
               # same GPU work); only the submission's checked call is replayed.
               "trace": self.replayer is not None and c.name != "pytorch"}
        reply, wall = self._request(c, msg)
        times = _net_times(reply)
        if not times:
            raise BenchFailed("RJ" if not c.trusted else "IE", f"the {c.name} worker returned no times")
        self._clock_notes(c, s, reply)
        if c.name != "pytorch" and reply.mode != "cpu" and reply.host:
            # The host clock far ahead of the events (checks.host_gap): for the submission a suspicion, settled
            # after timing (_host_gap); for the trusted reference, the sign of a busy host at this shape.
            gap = checks.host_gap(stats.median(list(reply.times)), stats.median(list(reply.host)))
            if gap:
                self.host_gaps.setdefault((c.name, s), gap)
        if c.name == "submission":
            self._rule_checks(reply, self.config.shapes[s], warmup=False)
            raw, host = list(reply.times), list(reply.host)
            # What the judge's own clock contradicts is RJ now (the host clock's lead over the events: above).
            problems = checks.clock_problems(event_total=sum(raw), host_total=sum(host),
                                             worker_wall=reply.worker_wall, judge_wall=wall,
                                             event_median=None, host_median=None)
            if problems:
                raise BenchFailed("RJ", "the timing does not add up: " + problems[0], {"clock": problems})
        c.last[s] = (reply, seed)
        return times, reply

    def _clock_notes(self, c: Contender, s: int, reply: replies.BenchResult) -> None:
        """Keep the clock's bookkeeping of one request (holds, retries, invalid samples) and its notes."""
        book = self.clock.setdefault((c.name, s), {"requests": 0, "samples": 0, "retries": 0, "invalid": 0,
                                                    "hold_s": 0.0, "overhead": []})
        book["requests"] += 1
        book["samples"] += len(reply.times)
        book["retries"] += reply.retries
        book["invalid"] += reply.invalid
        book["hold_s"] = max(book["hold_s"], reply.hold_s)
        self.holds[s] = max(self.holds.get(s, 0.0), reply.hold_s)  # every contender gets the longest
        book["overhead"] += list(reply.overhead)
        book["late"] = book.get("late", 0) + late_work_calls(reply)
        label = _shape_label(self.config.shapes[s])
        if reply.note:
            self._note(f"{c.name}: {reply.note}")
        if reply.invalid:
            self._note(f"{c.name} at {label}: in some samples the GPU reached the start event before every call "
                       f"was queued, even with the longest hold (GPU idle time may be counted in them)")
        if late_work_calls(reply) and c.name == "submission":
            self._note("work on another stream was still running after the call's own stream ended "
                       "(counted in its time)")

    def _note(self, note: str) -> None:
        if note not in self.notes:
            self.notes.append(note)

    def _rule_checks(self, reply: replies.BenchResult, params: dict, warmup: bool) -> None:
        """The rulebook's anti-cheat rules over a timed request's evidence (judge.rules), as for a judged call."""
        context = rules.Context(file=self.submission.name, phase="warmup" if warmup else "timed",
                                where=f"at bench shape {_shape_label(params)}")
        found = rules.violation(reply.evidence, (), context)
        if found is not None:
            raise BenchFailed(found.verdict.value, found.message, found.details)

    # ------------------------------------------------------------------ the run

    def run(self) -> dict:
        from judge.timing import lock

        if not self.config.shapes:
            raise BenchFailed("IE", f"problem {self.problem.id} has no [bench] shapes")
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
            self._waits = {"prewarm_wait_seconds": round(t1 - t0, 3),
                           "lock_wait_seconds": round(time.monotonic() - t1, 3)}
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
            self.ceilings = ceilings.get(torch_index(self.gpu), log=self.log)
        self._phase("starting workers")
        self._start()
        started = time.monotonic()
        plans = []
        for s, p in enumerate(self.config.shapes):
            self._phase(f"warming up: shape {s + 1} of {n}" if s not in self._warm
                        else f"warming up again on the idle GPU: shape {s + 1} of {n}")
            plans.append(self._plan(s, p))
        warm = time.monotonic()
        rounds, torch_times, last_round = [], {s: [] for s in range(len(plans))}, 0.0
        stopped = None
        while stopped is None:
            r0 = time.monotonic()
            order = self.contenders if len(rounds) % 2 == 0 else _swap_first_two(self.contenders)
            this = {}
            for s, plan in enumerate(plans):
                self._phase(f"timing: shape {s + 1} of {n}, round {len(rounds) + 1}")
                got = {}
                for c in order:
                    try:
                        got[c.name], _ = self._time(c, s, plan)
                    except _BaselineLost as lost:
                        self._drop_baseline(lost)
                this[s] = (got["reference"], got["submission"])
                if "pytorch" in got:
                    torch_times[s].append(got["pytorch"])
            rounds.append(this)
            last_round = time.monotonic() - r0
            _, gm = stats.speedups(rounds, self.score.clamp)
            stopped = self.config.stop.decide(len(rounds), gm.half_width, time.monotonic() - warm, last_round)
        timed = time.monotonic()
        timeline.add("speed run: start the workers", t_start, started)
        timeline.add("speed run: warm-up", started, warm)
        timeline.add("speed run: timed rounds", warm, timed, rounds=len(rounds))
        phases = {**self._waits, "start_seconds": round(started - t_start, 3),
                  "warmup_seconds": round(warm - started, 3), "rounds_seconds": round(timed - warm, 3)}
        if self._prewarm_seconds is not None:  # the warm-up beside the tests (warmup_seconds: the second one)
            phases["prewarm_seconds"] = self._prewarm_seconds
            phases["prewarmed_shapes"] = len(self._warm)
        phases.update(self._ahead_phases)  # of the warm-up ahead, its calls' checks and replays
        # (The profiler's requests never replace the timed calls' outputs the checks read.)
        with timeline.span("speed run: profiler clock"):
            self._profiles(plans)
        phases["profile_seconds"] = round(time.monotonic() - timed, 3)
        return {"plans": plans, "rounds": rounds, "torch_times": torch_times, "stopped": stopped,
                "phases": phases}

    def _trim(self, state: dict) -> None:
        """What the checks after the lock need, and nothing more, before the GPU is given back.

        The rounds leave every worker holding gigabytes: input sets, a flush buffer, and in the submission's
        worker the outputs of every call of its last request per shape (its share of TIMED_KEEP_BYTES). Checked outside
        the lock, beside other judges' cases and the next judge's rounds, that much per speed run filled the
        H200 at 12 softmax submissions at once (tests/gpu/RESULTS.md, 2026-12-05 call 2: five accepted files
        IE, MLE or RJ from CUDA out-of-memory errors). So the calls to check are drawn here (after the last timed
        request, as before: nothing it timed could know), their outputs and records are fetched now, the trusted
        workers are asked to exit (the profiler clock, their last use, is over), and only then does the
        submission's worker let go of everything it held, the drawn calls' outputs included. Fetched first: a
        worker told to keep some calls and drop the rest learns which are checked while its own code can still
        run (a finalizer on each output runs when it is dropped), and repaired the kept ones from copied inputs
        before they were read (a red-team helper, 2026-12-05, in the interpreter: wrong timed calls passed)."""
        from judge.channel import request_exits

        t0 = time.monotonic()
        sub = next(c for c in self.contenders if c.name == "submission")
        picked = {s: self._draw(sub.last[s][0].checkable if s in sub.last else ())
                  for s in range(len(state["plans"]))}
        state["picked"] = picked
        with timeline.span("speed run: trim, fetch the drawn calls' outputs"):
            state["fetched"] = {s: {call: self._fetch(sub, s, call) for call in calls}
                                for s, calls in picked.items()}
        # Asked to exit, not waited for: their exits (their CUDA contexts going down) run while the GPU is
        # another judge's already; _close waits for them.
        others = [c.client for c in self.contenders if c is not sub]
        request_exits(others)
        self._ended.extend(others)
        with timeline.span("speed run: trim, the submission's worker lets go"):
            self._request(sub, {"type": "bench_trim", "id": "trim"}, parse=replies.parse_bench_trimmed)
        state["phases"]["trim_seconds"] = round(time.monotonic() - t0, 3)
        timeline.add("speed run: trim", t0, time.monotonic())

    def _fetch(self, sub: Contender, s: int, call: int) -> replies.BenchOutputs:
        """The held outputs (and record) of call ``call`` of the submission's last request at shape s."""
        answer, _ = self._request(sub, {"type": "bench_check", "id": f"{s}-check", "shape": s, "call": call},
                                  parse=replies.parse_bench_outputs)
        return answer

    def _draw(self, checkable) -> list[int]:
        """The calls to check among those held (``checks_per_shape`` of them, drawn with the OS's randomness)."""
        left = list(checkable)
        return [left.pop(secrets.randbelow(len(left))) for _ in range(min(self.config.checks_per_shape, len(left)))]

    def _finish(self, state: dict, shared=contextlib.nullcontext) -> dict:
        """The output checks and their replays; the result. ``shared``: held around each check and each replay
        (the GPU taken shared, after the lock)."""
        plans = state["plans"]
        t0 = time.monotonic()
        checked = self._checks(plans, state.get("picked"), state.get("fetched"), shared=shared)
        phases = {**state["phases"], "check_seconds": round(time.monotonic() - t0, 3)}
        timeline.add("speed run: output checks", t0, time.monotonic())
        if self.replayer is not None:  # the replays of checked timed calls (their time is in check_seconds)
            phases.update({k: (round(v, 3) if isinstance(v, float) else v)
                           for k, v in self.replayer.timing.items() if k.startswith("replay")})
        return self._result(plans, state["rounds"], state["torch_times"], state["stopped"], checked, phases)

    # ------------------------------------------------------------------ after timing

    def _checks(self, plans, picked: dict | None = None, fetched: dict | None = None,
                shared=contextlib.nullcontext) -> list[dict]:
        """Every shape's check of a timed call (:meth:`_check`), and the replay of each checked call (:meth:`_replay`).

        A replay runs in the replay worker while the judge goes on checking the next shape's outputs (they
        share nothing: the replay has fresh inputs of its own), so its compiles and run overlap the output
        transfers and golden answers that follow, instead of adding to them. Findings are taken in the order
        the calls were checked, as if each replay had been waited for in turn: a replay's finding comes
        before a later shape's wrong output.
        """
        sub = next(c for c in self.contenders if c.name == "submission")
        n = len(plans)
        checked = []
        with _Replays(self, shared=shared) as replays:
            for s, plan in enumerate(plans):
                self._phase(f"checking outputs: shape {s + 1} of {n}")
                calls = None if picked is None else picked.get(s, [])
                got = None if fetched is None else fetched.get(s, {})
                with timeline.span(f"speed run: check shape {s + 1}"):
                    done = replays.guarded(lambda: self._check(s, plan["specs"], sub.last[s], calls=calls,
                                                               fetched=got, shared=shared))
                checked.append({"calls": [call for call, _ in done]})
                for call, answer in done:
                    replays.queue(s, plan["specs"], call, answer)
            replays.settle()
        return checked

    def _check(self, s: int, specs: list, held: tuple, *, what: str = "timed call", shared=contextlib.nullcontext,
               calls: list | None = None, fetched: dict | None = None) -> list[tuple[int, replies.BenchOutputs]]:
        """Outputs of randomly chosen calls of the submission's last request at shape s (``held``: its reply and
        seed), against the golden model: the same rule as a judged case's outputs (judge.rules.outputs). The
        calls checked, with their outputs (and records, for the replay). ``what`` names the calls in a
        finding; ``shared`` is held around each request and golden answer (the GPU taken shared, ahead of the
        lock); ``calls``: the calls to check, drawn already (_trim), else drawn here; ``fetched``: their outputs,
        fetched already (_trim), else asked for here."""
        from judge import expected, kit
        from judge.rules import outputs as output_rules

        sub = next(c for c in self.contenders if c.name == "submission")
        reply, seed = held
        checkable = list(reply.checkable)
        if not checkable:
            raise BenchFailed("RJ", f"the worker held no outputs of its {what}s to check")
        if calls is None:
            calls = self._draw(checkable)
        params = self.config.shapes[s]
        label = _shape_label(params)
        dev = "cuda" if self.device == "cuda" else "cpu"
        picked = []
        for call in calls:
            with shared():
                answer = fetched[call] if fetched is not None and call in fetched else self._fetch(sub, s, call)
                if not answer.present:
                    raise BenchFailed("RJ", f"the outputs of {what} {call} were not there to check")
                with self._compute:
                    args = bench_inputs.make(specs, bench_inputs.call_seed(seed, call), dev)
                    answers = expected.answers(self.problem, args, params.get("dtype", "float32"), dev, params)
                    wrong = output_rules.check(self.problem, answer.returned, answer.outputs, answers, dev)
                    del args, answers
                    kit.release_cached()
            if wrong is not None:
                raise BenchFailed("WA", f"{what} {call} at bench shape {label}: {wrong.message}",
                                  {"shape": params, "call": call})
            picked.append((call, answer))
        return picked

    def _replay(self, s: int, specs: list, call: int, found, *, what: str = "timed call",
                shared=contextlib.nullcontext) -> None:
        """What the replay of a checked call found (judge.replay.Replayer.check_bench: its launches, replayed
        alone on fresh inputs, must compute the answer): a call honest when judged and otherwise when timed
        is RJ. Wrong there, the same fresh inputs are given to the submission's worker: wrong in its process
        too is WA, right there RJ stands."""
        from judge.replay import Skipped

        params = self.config.shapes[s]
        label = _shape_label(params)
        if isinstance(found, Skipped) and found.counts and not found.limits:
            # As a test group none of whose cases could be replayed: otherwise a submission could opt its
            # timed calls out of the check, say by flooding their record only at the (public) bench shapes.
            raise BenchFailed("RJ", f"{what} {call} at bench shape {label} could not be replayed alone on "
                                    f"fresh inputs ({found.note}); it must be", {"shape": params, "replay": "none"})
        if isinstance(found, Skipped):
            self._note(f"the {what} at {label} was not replayed: {found.note}")
            return
        if found is None:
            return
        if found.case is not None:
            base = found.case["bench_seed"]
            sub = next(c for c in self.contenders if c.name == "submission")
            msg = {"type": "bench", "id": f"{s}-fresh", "shape": s, "args": specs, "samples": 1,
                   "per_sample": 1, "seed": base, "sets": 1, "flush_bytes": 0, "keep": True, "graph": False}
            from judge import expected, kit
            from judge.rules import outputs as output_rules

            dev = "cuda" if self.device == "cuda" else "cpu"
            with shared():
                self._request(sub, msg)
                again, _ = self._request(sub, {"type": "bench_check", "id": f"{s}-fresh", "shape": s, "call": 0},
                                         parse=replies.parse_bench_outputs)
                with self._compute:
                    args = bench_inputs.make(specs, bench_inputs.call_seed(base, 0), dev)
                    answers = expected.answers(self.problem, args, params.get("dtype", "float32"), dev, params)
                    wrong = output_rules.check(self.problem, again.returned, again.outputs, answers, dev) \
                        if again.present else None
                    del args, answers
                    kit.release_cached()
            if wrong is not None:
                raise BenchFailed("WA", f"a call at bench shape {label} on new inputs: {wrong.message}",
                                  {"shape": params, "found_by": "the replay check's fresh inputs"})
        raise BenchFailed(found.verdict.value, f"{what} {call} at bench shape {label}: {found.message}",
                          {"shape": params, "call": call, **found.details})

    def _profiles(self, plans) -> None:
        """The second clock: a few samples of every shape and worker under the CUDA profiler.

        After timing and the output check, so that the profiler cannot touch
        the timed rounds. The reference goes first: if the profiler is not
        there or fails in a trusted worker, the run goes on without this clock
        (a note). Profiled calls of the submission are watched and ruled on
        like timed ones; what the profiler itself changes in a worker (seen in
        the reference's) is not held against the submission.
        """
        if self.config.profile_samples <= 0:
            return
        order = sorted(self.contenders, key=lambda c: {"reference": 0, "pytorch": 1}.get(c.name, 2))
        by_profiler: set = set()
        for c in order:
            for s, plan in enumerate(plans):
                self._phase(f"profiler clock: {c.name}, shape {s + 1} of {len(plans)}")
                msg = {"type": "bench", "id": f"{s}-profile", "shape": s, "args": plan["specs"],
                       "samples": self.config.profile_samples, "per_sample": plan["per_sample"],
                       "seed": secrets.randbits(62), "sets": plan["sets"], "flush_bytes": plan["flush_bytes"],
                       "keep": True, "prepare": c.name == "pytorch", "profile": True,
                       "graph": plan["graph"].get(c.name, False)}
                try:
                    reply, _ = self._request(c, msg)
                except (BenchFailed, _BaselineLost) as exc:
                    self._note(f"profiler clock: the {c.name} worker failed under the profiler "
                               f"({str(getattr(exc, 'message', exc))[:200]}); no profiler clock for it")
                    if c.name == "reference":
                        return
                    break
                ev = reply.evidence
                if c.name == "reference":
                    by_profiler |= set(ev.tampered)
                elif c.name == "submission":
                    tampered = tuple(n for n in ev.tampered if n not in by_profiler)
                    ruled = dataclasses.replace(reply, evidence=dataclasses.replace(ev, tampered=tampered))
                    self._rule_checks(ruled, self.config.shapes[s], warmup=False)
                summary = profile_summary(reply)
                self.profiles[(c.name, s)] = summary
                if summary["status"] == "cpu":
                    continue  # interpreter mode: no GPU to hold a clock against
                if summary["status"] != "ok":
                    self._note(f"profiler clock ({c.name}): {summary['status']}"
                               + (f": {summary['note']}" if summary.get("note") else ""))
                    if summary["status"] == "unavailable" and c.name == "reference":
                        return
                elif summary.get("note"):
                    self._note(f"profiler clock ({c.name}): {summary['note']}")

    def _host_gap(self, s: int, label: str, params: dict, t_event: float, agree, t_prof: float | None) -> None:
        """A timed request of the submission's whose host clock ran far ahead of its CUDA events (checks.host_gap).

        A busy host (every core taken: a batch judging beside the speed run) does that to every worker, and
        the GPU's own records still agree with the events. So it is excused only when both hold: the trusted
        reference's requests at the same shape ran as far ahead of their events, and the submission's
        profiler figure agrees with its events (within compare_clocks' tolerance, not merely "not forged":
        a profiler figure below the events is the submission's to make). Else it stays what it was: RJ.
        """
        gap = self.host_gaps[("submission", s)]
        busy = ("reference", s) in self.host_gaps
        if t_prof is None or not busy or agree.disagree:
            raise BenchFailed("RJ", f"the timing does not add up: {gap}", {"clock": [gap], "shape": params})
        self._note(f"at {label} the host's clock ran ahead of the CUDA events, the reference's too "
                   f"({gap.split(' (')[0]}); the profiler's kernel records ({t_prof * 1e6:.1f} us per call) "
                   f"agree with the events ({t_event * 1e6:.1f} us): a busy host, not a forged timer")

    def _result(self, plans, rounds, torch_times, stopped, checked, phases) -> dict:
        intervals, gm = stats.speedups(rounds, self.score.clamp)
        shapes = []
        sub = next(c for c in self.contenders if c.name == "submission")
        ref = next(c for c in self.contenders if c.name == "reference")
        for s, plan in enumerate(plans):
            params = self.config.shapes[s]
            label = _shape_label(params)
            sub_all = [t for r in rounds for t in r[s][1]]
            ref_all = [t for r in rounds for t in r[s][0]]
            t_sub, t_ref = stats.median(sub_all), stats.median(ref_all)
            work = tuple(self.problem.golden.work(dict(params)))
            row = {"params": params, "mode": plan["mode"], "calls_per_sample": plan["per_sample"],
                   "flush": bool(plan["flush_bytes"]), "samples_per_round": plan["calls"],
                   "calls_per_round": plan["calls"] * plan["per_sample"],
                   "time_s": t_sub, "reference_time_s": t_ref, **intervals[s].as_dict(),
                   "bytes": work[0], "flops": work[1]}
            times = {"submission": t_sub, "reference": t_ref}
            if torch_times[s]:
                t_torch = stats.median([t for r in torch_times[s] for t in r])
                times["pytorch"] = t_torch
                row["pytorch_time_s"] = t_torch
                row["vs_pytorch"] = t_torch / t_sub
                row["reference_vs_pytorch"] = t_torch / t_ref
                if self.cuda:
                    row["pytorch_mode"] = "graph" if plan["graph"].get("pytorch") else "events"
            row["gbps"] = work[0] / t_sub / 1e9 if work[0] else None
            row["tflops"] = work[1] / t_sub / 1e12 if work[1] else None
            clock = {}
            # The trusted reference vouches for the profiler clock at this shape: where even its events fall
            # far below its profiler span, the profiler clock is off here and judges nobody.
            ref_prof = (self.profiles.get(("reference", s)) or {}).get("time_s")
            trusted_clock = not checks.compare_clocks(t_ref, ref_prof).forged
            for name, t_event in sorted(times.items(), key=lambda kv: kv[0] != "reference"):
                prefix = "" if name == "submission" else f"{name}_"
                prof = self.profiles.get((name, s)) or {}
                t_prof = prof.get("time_s")
                row[f"{prefix}profiler_time_s"] = t_prof
                book = dict(self.clock.get((name, s)) or {})
                over = book.pop("overhead", [])
                book["overhead_s"] = stats.median(over) if over else None
                book["profiler"] = prof or None
                clock[name] = book
                agree = checks.compare_clocks(t_event, t_prof)
                if agree.forged and name == "submission" and trusted_clock:
                    raise BenchFailed("RJ", f"at bench shape {label} {agree.message}: a forged timer",
                                      {"shape": params, "time_s": t_event, "profiler_time_s": t_prof})
                if name == "submission" and ("submission", s) in self.host_gaps:
                    self._host_gap(s, label, params, t_event, agree, t_prof if trusted_clock else None)
                if agree.disagree:
                    self._note(f"{name} at {label}: {agree.message}"
                               + ("" if trusted_clock else " (the reference's too: not used to judge)"))
            row["clock"] = clock
            if self.cuda:
                from judge.timing.ceilings import matmul_rate

                floor = checks.floor_time(work, self.ceilings["copy_bytes_per_s"],
                                          matmul_rate(self.ceilings, params.get("dtype", "float32")))
                row["floor_s"] = floor.seconds
                row["bound"] = floor.bound
                row["roofline_pct"] = 100 * floor.seconds / t_sub if floor.seconds else None
                row["reference_roofline_pct"] = 100 * floor.seconds / t_ref if floor.seconds else None
                if floor.seconds and checks.below_floor(t_sub, floor, self.config.floor_margin):
                    raise BenchFailed("RJ", f"at bench shape {label} the median time "
                                            f"{t_sub * 1e6:.2f} us is below what this GPU can do "
                                            f"({floor.seconds * 1e6:.2f} us: {floor.bound}-bound); the work was "
                                            "skipped or the timing forged", {"shape": params})
            row["checked_calls"] = checked[s]["calls"]
            shapes.append(row)
        kernel_list = _own_kernels(sub)
        spills = [k for k in kernel_list if k.get("spills")]
        notes = list(self.notes)
        if spills:
            notes.append("register spills: " + ", ".join(f"{k['name']} ({k['spills']} spilled)" for k in spills)
                         + " - spilled registers live in local memory, the most common hidden slowdown")
        if not self.cuda:
            notes.insert(0, NOT_A_CLAIM)
        half = gm.half_width
        if stopped != "ci":
            notes.append(f"stopped by the {'round limit' if stopped == 'rounds' else 'time budget'} with the "
                         f"geometric mean's interval at +-{100 * (math.exp(half) - 1):.2f}% "
                         f"(target +-{100 * self.config.stop.ci_target:.1f}%)")
        return {
            "measured": True,
            "geomean_speedup": gm.value,
            "ci": [gm.low, gm.high],
            "ci_half_width_log": half,
            "rounds": len(rounds),
            "stopped": stopped,
            "shapes": shapes,
            "kernels": kernel_list,
            "ceilings": {k: v for k, v in self.ceilings.items() if k != "version"} if self.cuda else None,
            "rule": self.score.describe(),
            "notes": notes,
            "phases": phases,
            "timing_mode": "cuda" if self.cuda else "cpu (not a speed claim)",
            "clock": CLOCK if self.cuda else NOT_A_CLAIM,
            "reference": str(self.problem.reference_path.name),
            "reference_kernels": _own_kernels(ref),
        }


class _Discarded(Exception):
    """A run discarded while one of its replays waited for the GPU: the replay is not carried out."""


class _Replays:
    """The replays of checked calls (judge.replay.Replayer.check_bench), one at a time in a thread of their own
    beside the judge's next checks, their findings taken in the order the calls were checked (settle), as if
    each had been waited for in turn. ``what`` names the calls in a finding; ``shared`` is held around each
    replay (the GPU taken shared, ahead of the lock). Without a replay worker, nothing is queued."""

    def __init__(self, run: SpeedRun, *, what: str = "timed call", shared=contextlib.nullcontext):
        from concurrent.futures import ThreadPoolExecutor

        self.run, self.what, self.shared = run, what, shared
        self.pending: list = []  # (shape, specs, call, future of the replay's finding)
        # One thread per replay worker: each replay takes a free one (judge.replay.Replayers).
        lanes = len(getattr(run.replayer, "members", [run.replayer]))
        self.pool = ThreadPoolExecutor(lanes, thread_name_prefix="judge-bench-replay") if run.replayer else None

    def __enter__(self) -> "_Replays":
        return self

    def __exit__(self, *exc) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)

    def queue(self, s: int, specs: list, call: int, answer) -> None:
        if self.pool is None:
            return
        run, shared = self.run, self.shared
        replayer, params = run.replayer, run.config.shapes[s]

        def replay():
            if self.what == "warm-up call" and run._ahead_cut.is_set():
                with run._moving:  # (a thread per replay worker)
                    run._ahead_skipped["replays"] += 1
                return None  # the run waits for the warm-up ahead: the timed calls' replays come soon
            with timeline.span(f"replay ({self.what}, shape {s + 1})"):
                if run._stopping.is_set():
                    return None  # discarded: its worker is closed, nothing to replay for

                @contextlib.contextmanager
                def gpu():  # the replay's GPU work (after its compile pass, judge.replay.Replayer.precompile)
                    with shared():
                        if run._stopping.is_set():
                            raise _Discarded  # discarded while it waited
                        yield
                try:
                    return replayer.check_bench(params, specs, answer, run.device, shared=gpu)
                except _Discarded:
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
        n = len(self.run.config.shapes)
        while self.pending:
            s, specs, call, future = self.pending.pop(0)
            self.run._phase(f"replaying a {self.what}: shape {s + 1} of {n}")
            with timeline.span(f"speed run: wait for the replay of shape {s + 1}"):
                found = future.result()
            self.run._replay(s, specs, call, found, what=self.what, shared=self.shared)


def checks_ahead(cuda: bool) -> bool:
    """Whether the speed run checks a warm-up call of every shape ahead of the lock (SpeedRun._check_ahead): on a
    GPU, where it gets the replay worker's compiles done beside the tests (not in the interpreter, which
    compiles nothing; tests there patch this to run it)."""
    return cuda


def _own_kernels(c: Contender) -> list[dict]:
    """The distinct compiled kernels of a worker's own file launched in its last requests."""
    seen = {}
    for reply, _ in c.last.values():
        for info in reply.kernels:
            if info.own:
                seen[info] = info.as_dict()
    return list(seen.values())


def graph_plan(captured: dict) -> dict:
    """Who replays a CUDA graph at a shape, from who could be captured: the submission and the reference
    together or neither (they are timed the same way), the PyTorch baseline on its own."""
    both = bool(captured.get("submission")) and bool(captured.get("reference"))
    return {name: (bool(ok) if name == "pytorch" else both) for name, ok in captured.items()}


def choose_per_sample(fastest: float, *, target: float = SAMPLE_TARGET, max_k: int = MAX_PER_SAMPLE,
                      set_bytes: int = 1, set_budget: int = gpu_budget.TIMED_SETS_BYTES) -> int:
    """K, the calls per timed sample: enough for ``target`` seconds of GPU work at the fastest contender's
    time per call (1 when a call is that long already), at most ``max_k`` and as many input sets as fit."""
    if not fastest > 0 or fastest >= target:
        return 1
    k = math.ceil(target / fastest - 1e-9)
    return int(max(1, min(k, max_k, set_budget // max(1, set_bytes))))


def _late(reply: replies.BenchResult) -> list[bool]:
    """Per sample: is work on another stream counted (did it run on after the calls' own stream ended)?

    Decided for the request as a whole, by the median sample: the device-wide
    end also carries the host's latency to see the sync return, and one sample
    in a few has a host hiccup (a page fault, the scheduler) far above the
    usual gap. Judged sample by sample, those hiccups were counted as work (on
    the H200, a 3 us RMSNorm's rounds spread by +-12%). Work a submission
    leaves behind in most of its samples moves the median; work left in a few
    cannot move the median time either.
    """
    raw, device, gaps = list(reply.times), list(reply.device_times), sorted(reply.sync_gaps)
    if reply.mode == "graph" or len(device) != len(raw) or not gaps or not raw:
        # A replayed graph holds all of its work (capture fails on a stream left unjoined): there is no
        # late work to find, only the host's latency to see the device-wide sync return.
        return [False] * len(raw)
    excess = stats.median([d - t for t, d in zip(raw, device)])
    late = excess > 2 * gaps[-1] + 20e-6 + 0.1 * stats.median(raw)
    return [late] * len(raw)


def _net_times(reply: replies.BenchResult) -> list[float]:
    """Per-call times: each sample's time less the median overhead of an empty timed region (never
    below half), divided by the calls it held (``per_sample``).

    Only samples that were fully queued before their start event (``valid``)
    count, unless none was. Each CUDA sample has two ends: the end event on the
    calls' own stream, and one recorded after a device-wide sync. Their gap is
    the sync's latency (measured with nothing timed: ``sync_gaps``) unless
    work on another stream was still running after the calls' stream
    finished: then that work is counted, up to the device-wide end less the
    usual gap.
    """
    k = max(1, reply.per_sample)
    raw, over, device = list(reply.times), list(reply.overhead), list(reply.device_times)
    eps = stats.median(over) if over else 0.0
    gaps = sorted(reply.sync_gaps)
    late = _late(reply)
    if any(late):
        usual = stats.median(gaps)
        raw = [d - usual if lt else t for t, d, lt in zip(raw, device, late)]
    valid = list(reply.valid) if len(reply.valid) == len(raw) else [True] * len(raw)
    use = [t for t, ok in zip(raw, valid) if ok and t > 0] or [t for t in raw if t > 0]
    return [max(t - eps, 0.5 * t) / k for t in use]


def late_work_calls(reply: replies.BenchResult) -> int:
    """How many samples left work on another stream after their own stream finished (see _net_times)."""
    return sum(_late(reply))


def profile_summary(reply: replies.BenchResult) -> dict:
    """The profiler clock of one profiled request, per call: the median over samples of the GPU span of
    the sample's calls (first kernel's start to last kernel's end) over K; with the event clock of the
    same samples beside it."""
    prof = reply.profile or replies.ProfileResult(status="unavailable", note="no profile in the reply")
    status = prof.status
    out = {"status": status, "note": prof.note or None, "method": prof.method or None}
    k = max(1, reply.per_sample)
    samples = list(prof.samples)
    if len(reply.valid) == len(samples):
        # A sample the GPU started before every call was queued has host gaps inside its span.
        samples = [x for x, ok in zip(samples, reply.valid) if ok]
        if status == "ok" and not samples:
            status = out["status"] = "unqueued"
            out["note"] = "no profiled sample was queued before the GPU reached it"
    samples = [x for x in samples if x.kernels]
    if status == "ok" and samples:
        out["time_s"] = stats.median([x.span_s for x in samples]) / k
        out["busy_s"] = stats.median([x.busy_s for x in samples]) / k
        calls = [t for x in samples for t in x.calls if t]
        out["call_span_s"] = stats.median(calls) if calls else None
        out["kernels_per_call"] = stats.median([x.kernels for x in samples]) / k
        out["samples"] = len(samples)
    events = _net_times(reply) if reply.times else []
    out["event_time_s"] = stats.median(events) if events else None
    return out


def _swap_first_two(contenders: list) -> list:
    """Reference and submission trade places every other round; the baseline stays last."""
    out = list(contenders)
    if len(out) >= 2:
        out[0], out[1] = out[1], out[0]
    return out

