"""The speed run's workers: the submission's, the reference's and the PyTorch baseline's (the contenders), and
the replay worker beside them. Spawned, greeted, asked one request at a time, closed.

The submission's worker runs in the session's sandbox; the reference and the baseline are trusted code in plain
processes. How a worker's death or error reads depends on whose worker it was (:func:`request`).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from judge import calls as call_modes
from judge import gpu_budget, intake, rules
from judge.options import torch_device
from judge.replies import parsers, records
from judge.timing.findings import BaselineLost, BenchFailed
from judge.verdicts import Verdict

KEEP_BYTES = 4 << 30  # output bytes a worker's reply may carry (a request's held outputs, fetched for a check)


@dataclass
class Contender:
    name: str  # "submission", "reference", "pytorch"
    client: object  # judge.channel.WorkerChannel
    trusted: bool
    timeout: float
    last: dict = field(default_factory=dict)  # shape -> (reply, seed) of the last request


def request(c: Contender, message: dict, parse=parsers.parse_bench_reply):
    """Send one request; (the parsed reply, judge's wall seconds). Deaths and errors become BenchFailed."""
    from judge.channel import WorkerDied

    t0 = time.perf_counter()
    try:
        c.client.send_case(message, [])
        reply = c.client.receive(parse, timeout=c.timeout, max_bytes=KEEP_BYTES + (1 << 20))
    except WorkerDied as died:
        if c.name == "pytorch":
            raise BaselineLost(died.detail) from None
        if c.trusted:
            raise BenchFailed(Verdict.IE, f"the {c.name} worker died while timed: {died.detail}") from None
        raise BenchFailed(rules.death_verdict(died.reason).value, f"while timed: {died.detail}") from None
    wall = time.perf_counter() - t0
    if isinstance(reply, records.BenchError):
        err = reply.error
        first = err.message.strip().splitlines()[0][:300] if err.message.strip() else ""
        text = f"{err.type}: {first}"
        if c.name == "pytorch":
            raise BaselineLost(text)
        if c.trusted:
            raise BenchFailed(Verdict.IE, f"the {c.name} worker failed while timed: {text}")
        raise BenchFailed(rules.error_verdict(err.category).value, f"while timed: {text}", {"error": err.as_dict()})
    return reply, wall


class Workers:
    """One speed run's workers. ``contenders``: those greeted, in timing order; ``replayer``: the replay worker
    (judge.replay), when the run replays its checked calls. ``stopping`` is set when the run is discarded: no
    worker is greeted after it. ``compute``: the judge's own work for the output checks and the replays beside
    them, one at a time (handed to the replay worker)."""

    def __init__(
        self,
        problem,
        submission: Path,
        *,
        device: str,
        interpret: bool,
        gpu: int,
        backend,
        limits,
        scratch: Path,
        torch_baseline: bool,
        replay: bool,
        replay_workers: int,
        compute: threading.Lock,
        stopping: threading.Event,
    ):
        self.problem = problem
        self.submission = Path(submission)
        self.device = device
        self.interpret = interpret
        self.gpu = gpu
        self.backend = backend
        self.limits = limits
        self.scratch = Path(scratch)
        self.torch_baseline = torch_baseline
        self.replay = replay
        self.replay_workers = replay_workers
        self.compute = compute
        self.stopping = stopping
        self.contenders: list[Contender] = []
        self.replayer = None
        self.replay_timing: dict = {}
        self.spawned: list | None = None  # (name, channel, entry, trusted) spawned, not greeted yet
        self.spawn_failed: Exception | None = None
        self.moving = threading.Lock()  # spawned -> contenders (the warm-up thread) against close
        self.ended: list = []  # the trusted workers' channels, asked to exit before the checks (SpeedRun._trim)

    def spawn(self) -> None:
        """Spawn the workers (the submission's, the reference's, PyTorch's and the replay worker) and return:
        they import torch and Triton and make their CUDA contexts while the judge goes on. Idempotent; what
        fails here is raised by :meth:`start`. Nothing here touches the GPU lock: a worker's start is not timed
        work."""
        if self.spawned is not None:
            return
        self.spawned = []
        try:
            self._spawn()
        except Exception as exc:  # noqa: BLE001 - raised by start(), where a speed run's failure belongs
            self.spawn_failed = exc

    def _spawn(self) -> None:
        from judge.channel import WorkerChannel
        from judge.sandbox import Job
        from judge.sandbox.process import ProcessBackend
        from judge.timing.ceilings import cache_dir

        trusted_root = cache_dir() / "workers"
        plan = [("submission", self.backend, self.submission, self.problem.entry_point, self.scratch, False)]
        ref = self.problem.reference_path
        if not ref.is_file():
            raise BenchFailed(Verdict.IE, f"no reference solution at {ref}: nothing to compare the speed with")
        plan.append(
            (
                "reference",
                ProcessBackend(),
                ref,
                self.problem.entry_point,
                trusted_root / f"{self.problem.directory.name}-reference",
                True,
            )
        )
        if self.torch_baseline and callable(getattr(self.problem.golden, "pytorch", None)):
            plan.append(
                (
                    "pytorch",
                    ProcessBackend(),
                    self.problem.directory / "golden.py",
                    "pytorch",
                    trusted_root / f"{self.problem.directory.name}-pytorch",
                    True,
                )
            )
        started = self.spawned
        # Every timed worker holds input sets and outputs over the shapes and a flush buffer besides the call
        # itself: judge.gpu_budget.TIMED_EXTRA_BYTES more than a correctness worker, the plan keeping to it
        # (judge.timing.plan). The trusted ones are capped the same, so that what the judge reserved for the
        # speed run (judge.gpu_admission) is what its workers can take.
        timed_limits = self.limits
        if self.limits.gpu_memory_mb:
            timed_limits = dataclasses.replace(self.limits, gpu_memory_mb=gpu_budget.timed_cap_mb(self.limits))
        for name, backend, path, entry, scratch, trusted in plan:
            scratch.mkdir(parents=True, exist_ok=True)
            # The submission's worker finds the kernels its correctness workers compiled (the same bytes,
            # judge.intake.kernel_cache); the trusted workers keep theirs in their own scratch.
            cache = intake.kernel_cache(path, self.device, self.interpret) if not trusted else None
            limits = timed_limits
            job = Job(
                submission=path,
                scratch=scratch,
                device=self.device,
                interpret=self.interpret,
                limits=limits,
                gpu=self.gpu if self.device == "cuda" else None,
                cache=cache,
            )
            started.append((name, WorkerChannel(backend, job), entry, trusted))  # spawned: they start in parallel
            if name == "submission" and self.replay:
                from judge.replay import Replayer
                from judge.replayers import Replayers

                golden = torch_device(self.gpu) if self.device == "cuda" else "cpu"
                members = [
                    Replayer(
                        self.problem,
                        dataclasses.replace(job, limits=self.limits),
                        self.backend,
                        threads=1,
                        golden_device=golden,
                        compute_lock=self.compute,
                    )
                    for _ in range(self.replay_workers)
                ]
                self.replayer = members[0] if len(members) == 1 else Replayers(members)
                # Started with the contenders (its start overlaps theirs) and waited for with them (below), so
                # that its start, and on a GPU its CUDA context, is over before the first timed sample; it
                # waits idle until the checks after timing.
                self.replayer.prestart()

    def start(self) -> None:
        """Spawn (if not yet) and greet every worker; wait for the replay worker to be ready."""
        from judge.channel import WorkerDied, WorkerStartFailed

        self.spawn()
        if self.spawn_failed is not None:
            raise self.spawn_failed
        while True:
            with self.moving:
                if not self.spawned or self.stopping.is_set():
                    break
                name, client, entry, trusted = self.spawned.pop(0)
                self.contenders.append(Contender(name, client, trusted, self.limits.case_seconds))
            who = "the submission" if name == "submission" else f"the {name} worker"
            try:
                # A factory problem's submission and reference register their operator first (judge.calls).
                own = entry == self.problem.entry_point
                setup = call_modes.worker_setup(self.problem, self.interpret) if own else None
                hello = client.start(submission_entry=entry, arity=self.problem.arity, threads=1, calls=setup)
            except WorkerStartFailed as exc:
                raise BenchFailed(Verdict.IE, str(exc)) from None
            except WorkerDied as died:
                verdict = rules.death_verdict(died.reason) if not trusted else Verdict.IE
                raise BenchFailed(verdict, f"{who} did not load: {died.detail}") from None
            if not hello.ok:
                err = hello.error
                verdict = rules.error_verdict(err.category) if not trusted else Verdict.IE
                raise BenchFailed(verdict, f"{who} did not load: {err.type}: {err.message[:300]}")
        if self.replayer is not None and not self.stopping.is_set():
            self.replayer.wait_ready()

    def drop_baseline(self, lost: Exception, notes: list) -> None:
        for c in [c for c in self.contenders if c.name == "pytorch"]:
            self.contenders.remove(c)
            try:
                c.client.close()
            except Exception:  # noqa: BLE001
                pass
        notes.append(f"the PyTorch baseline failed and was left out: {str(lost)[:300]}")

    def close(self) -> None:
        """End every worker: the contenders, any spawned but never greeted (a session whose tests failed), and
        the replay worker (its timing kept in ``replay_timing``)."""
        from judge.channel import request_exits

        with self.moving:
            clients = [c.client for c in self.contenders] + [client for _, client, _, _ in self.spawned or []]
            self.spawned = []
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
