"""The exchange with one submission's worker: start it, send it cases as data, get parsed replies back.

The session decides what to run and what it means; this module only moves a
case across the boundary and a reply back, and keeps the books on where the
time went (the report's ``timing``). A case goes out as tensor storages (the
exact bytes, strides and offsets golden.make_inputs laid out) and scalars; a
reply comes back through judge.channel as a typed record of judge.replies.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from judge import calls, kit, timeline
from judge.channel import WorkerChannel, WorkerDied, WorkerStartFailed, request_exits
from judge.judgement import death_outcome, error_outcome
from judge.pool.copies import copy_entries, entry_names
from judge.replies import parsers, records
from judge.sandbox import Job
from judge.shared import wire
from judge.verdicts import Outcome, Verdict


def encode_inputs(inputs: list) -> tuple[list, list, int]:
    """(the case's arguments as wire descriptors, the storages' bytes, their total size)."""
    wire_args, payloads, input_bytes = [], [], 0
    for arg in inputs:
        if isinstance(arg, kit.TensorInput):
            storage = arg.storage()
            desc = {"dtype": wire.dtype_name(storage.dtype), "shape": [storage.numel()]}
            raw = wire.storage_to_wire(storage)
            wire_args.append(
                {
                    "kind": "tensor",
                    "storage": desc,
                    "shape": list(arg.values.shape),
                    "strides": arg.strides(),
                    "offset": arg.offset,
                }
            )
            payloads.append((desc, raw))
            input_bytes += len(raw)
        elif arg is None:
            wire_args.append({"kind": "none"})
        elif isinstance(arg, (bool, int, float)):
            wire_args.append({"kind": "scalar", "value": arg})
        else:
            raise TypeError(f"make_inputs returned an unsupported argument {type(arg).__name__}")
    return wire_args, payloads, input_bytes


class Exchange:
    """One worker at a time for one submission; a dead worker is replaced on the next case."""

    def __init__(self, problem, job: Job, backend, *, threads: int | None):
        self.problem = problem
        self.job = job
        self.backend = backend
        self.threads = threads
        self.channel: WorkerChannel | None = None
        self.info: dict = {}  # versions and device of the last worker that started
        self.printed: list[str] = []
        self.case_id = 0
        self.timing = {
            "worker_starts": 0,
            "worker_start_seconds": 0.0,
            "cases": 0,
            "worker_seconds": 0.0,
            "golden_seconds": 0.0,
            "kernels_compiled": 0,
            "compile_seconds": 0.0,
        }
        self._compiles_seen = (0, 0.0)
        self.last_phases: dict = {}  # the last reply's split of the worker's seconds (records.Evidence.phases)
        self._stop_lock = threading.Lock()

    @property
    def alive(self) -> bool:
        return self.channel is not None

    def take(self) -> None:
        """Its worker now (from a pool, the one waiting longest; else spawned), started by start(). One that
        could not be had is tried again by start(), which says why."""
        try:
            self.channel = WorkerChannel(self.backend, self.job)
        except Exception:  # noqa: BLE001 - start() tries again and reports it
            self.channel = None

    def start(self) -> Outcome | None:
        """Start a worker (taken already by take(), or now) and load the submission; an Outcome when that
        failed (None when it is ready)."""
        t0 = time.monotonic()
        limits = self.job.limits
        try:
            if self.channel is None:
                self.channel = WorkerChannel(self.backend, self.job)
            hello = self.channel.start(
                submission_entry=self.problem.entry_point,
                arity=self.problem.arity,
                threads=self.threads,
                calls=calls.worker_setup(self.problem, self.job.interpret),
            )
        except WorkerStartFailed as exc:
            self.stop()
            return Outcome(Verdict.IE, str(exc))
        except WorkerDied as died:
            self.stop()
            return death_outcome(
                died.reason,
                died.detail,
                limit_seconds=limits.startup_seconds,
                interpret=self.job.interpret,
                loading=True,
            )
        self.timing["worker_starts"] += 1
        self.timing["worker_start_seconds"] += time.monotonic() - t0
        timeline.add(
            "worker start",
            t0,
            time.monotonic(),
            pooled=self.channel.pooled,
            imports_seconds=hello.startup.get("imports_seconds"),
            waited_seconds=hello.startup.get("waited_seconds"),
            load_seconds=hello.startup.get("load_seconds"),
        )
        # The worker's own account of its start (summed over starts): importing torch and Triton (a pooled
        # worker did that before it was handed over) and loading the submission.
        for part in ("imports_seconds", "load_seconds"):
            if part in hello.startup:
                self.timing[f"worker_{part}"] = self.timing.get(f"worker_{part}", 0.0) + hello.startup[part]
        if self.channel.pooled:  # handed over warm by the driver's worker pool (judge.pool)
            self.timing["pooled_starts"] = self.timing.get("pooled_starts", 0) + 1
            if getattr(self.channel.proc, "placed", ""):  # forked in a litter (judge.sandbox.litter)
                self.timing["litter_starts"] = self.timing.get("litter_starts", 0) + 1
        self._compiles_seen = (0, 0.0)
        self.info = {"versions": dict(hello.versions), "device_name": hello.device_name}
        if not hello.ok:
            self.stop()
            return error_outcome(hello.error)
        return None

    def stop(self) -> None:
        """Close the worker, dead or alive: kill what is left, keep what it printed. Safe from another thread
        than the one using it (the session stops a worker whose case will not be judged): that one's wait
        for a reply then ends as the worker's death."""
        with self._stop_lock:
            channel, self.channel = self.channel, None
        if channel is not None:
            channel.close()
            text = channel.output_text()
            if text:
                self.printed.append(text)

    def _live(self) -> WorkerChannel:
        channel = self.channel
        if channel is None:
            raise WorkerDied("crash", "the worker was stopped")
        return channel

    def send(self, kind: str, wire_args: list | None, payloads: list, call: dict | None = None) -> int:
        """Send a case ("case": new inputs) or a refill (new values in the last case's memory); its id.
        ``call``: how the case calls the entry point (judge.calls.case_spec; a refill repeats its case's)."""
        self.case_id += 1
        message = {"type": kind, "id": self.case_id}
        if wire_args is not None:
            message["args"] = wire_args
        if call is not None and kind == "case":
            message["call"] = call
        self._live().send_case(message, payloads)
        return self.case_id

    def receive(self, case_id: int, max_bytes: int) -> records.CaseResult | records.CaseError:
        """The parsed reply to ``case_id``; raises judge.channel.WorkerDied when there is none."""
        t0 = time.monotonic()
        reply = self._live().receive(
            parsers.parse_case_reply, timeout=self.job.limits.case_seconds, max_bytes=max_bytes, expect_id=case_id
        )
        self.timing["cases"] += 1
        self.timing["worker_seconds"] += time.monotonic() - t0
        self._count_compiles(reply.evidence)
        self.last_phases = dict(reply.evidence.phases)  # the worker's own split of it, for the timeline
        return reply

    def _count_compiles(self, evidence: records.Evidence) -> None:
        """Kernels the worker compiled so far (one per constexpr combination) and the time in those launches."""
        if evidence.compiled is None:
            return
        n, secs = evidence.compiled, evidence.compile_seconds or 0.0
        self.timing["kernels_compiled"] += max(0, n - self._compiles_seen[0])
        self.timing["compile_seconds"] += max(0.0, secs - self._compiles_seen[1])
        self._compiles_seen = (n, secs)

    def output_text(self) -> str:
        """What this lane's workers printed: those stopped, and the one running now (a report is made before
        the session stops its workers, so the running one's must be read here, not only at its stop)."""
        parts = list(self.printed)
        channel = self.channel
        if channel is not None:
            parts.append(channel.output_text())
        return "\n".join(p for p in parts if p)[-8192:]

    def kernel_cache(self):
        """The directory this worker's Triton caches its compiled kernels in, on the host: a pooled worker's
        own (judge.pool: filled from the content's cache when handed out), else the content's (Job.cache)."""
        proc = self.channel.proc if self.channel is not None else None
        return getattr(proc, "worker_cache", None) or self.job.cache


# Kernel-cache entries one worker hands its siblings at most: 98's reference compiles about 222 variants;
# a worker that writes thousands of directories into its cache gets no more of them copied.
SHARED_ENTRIES_MAX = 4096


class Workers:
    """The workers one submission's cases are spread over: the first, which Hypothesis's shrinking uses,
    and the others, started beside it in threads (they import torch and Triton meanwhile) and ready for
    the first group that has cases to spread. Each has its own scratch; they share the kernel cache."""

    def __init__(self, problem, job: Job, backend, *, threads: int | None, count: int):
        self.first = Exchange(problem, job, backend, threads=threads)
        self.all = [self.first]
        for i in range(1, count):
            scratch = job.scratch / f"worker{i}"
            scratch.mkdir()
            self.all.append(Exchange(problem, replace(job, scratch=scratch), backend, threads=threads))
        self._pool: ThreadPoolExecutor | None = None
        self._starts: list = []
        self._shared: dict = {}  # a worker's cache directory -> the entries of it already handed to the others
        self._share_lock = threading.Lock()
        self.share_seconds = 0.0

    def share_compiles(self, source: Exchange) -> int:
        """Hand the kernels ``source`` compiled to its siblings, between cases.

        A pooled worker caches its kernels in a directory of its own (judge.pool), so without this each of
        a submission's workers compiles every kernel variant its cases need, whichever worker compiled it
        first (98's reference: minutes of compiles summed; docs/measurements, the worker pool). The
        judge copies the new entries (plain files of a bounded size: judge.pool.copies.copy_entries) into the
        other workers' directories and the content's; all of them are the same submission's, so no
        submission can plant a kernel another would load. How many entries it copied."""
        t0 = time.monotonic()
        src = source.kernel_cache()
        if src is None:
            return 0
        with self._share_lock:
            done = self._shared.setdefault(src, set())
            names = [n for n in entry_names(src) if n not in done][: max(0, SHARED_ENTRIES_MAX - len(done))]
            done.update(names)
            dests = {ex.kernel_cache() for ex in self.all if ex is not source and ex.alive}
            dests.add(self.first.job.cache)
        dests.discard(None)
        dests.discard(src)
        copied = 0
        if names:
            for dest in dests:
                try:
                    dest.mkdir(parents=True, exist_ok=True)
                    copied += copy_entries(src, dest, names)
                except OSError:
                    pass  # a cache is a saving, never a condition
        with self._share_lock:
            self.share_seconds += time.monotonic() - t0
        return copied

    def start(self) -> Outcome | None:
        """Start them all; wait only for the first (an Outcome when it could not load the submission).

        The first takes its worker before the others' threads do: from a pool, the one spawned first, the
        likeliest to be ready. Every case waits for it; taken last, it would be the pool's youngest,
        handed over seconds after the others (docs/measurements: the worker pool, the head start)."""
        self.first.take()
        if len(self.all) > 1:
            self._pool = ThreadPoolExecutor(len(self.all), thread_name_prefix="judge-worker")
            self._starts = [self._pool.submit(ex.start) for ex in self.all[1:]]
        return self.first.start()

    def load_failure(self) -> Outcome | None:
        """The first failure of a worker but the first to load the file (its import failed, crashed, ran out of
        time or memory), once their starts are over; None where each loaded it or could not start for a reason
        of its environment (IE, its lane dropped: the others carry on). A file that does not load in every
        process it is given fails as it would in the first: a file that exits at import in whichever worker comes
        first (a red-team file did) would be AC where that is not the first worker."""
        for future in self._starts:
            try:
                outcome = future.result()
            except Exception:  # noqa: BLE001 - the judge's own trouble starting it, as IE
                continue
            if outcome is not None and outcome.verdict is not Verdict.IE:
                return outcome
        return None

    def ready(self) -> list[Exchange]:
        """The workers that are up: the first, and each other one once its start succeeded."""
        return [ex for ex in self.all if self.up(ex)]

    def up(self, ex: Exchange) -> bool:
        """Whether worker ``ex`` is up, once its start is over (the first was started before any case; each
        other one's lane waits here for its own start only, not for its siblings')."""
        if ex is self.first:
            return True
        try:
            return self._starts[self.all.index(ex) - 1].result() is None
        except Exception:  # noqa: BLE001 - a worker that could not start: the others carry on
            return False

    def stop(self) -> None:
        for future in self._starts:
            future.cancel()
            try:
                future.result()
            except Exception:  # noqa: BLE001 - a start that failed: stopped below like the others
                pass
        request_exits(ex.channel for ex in self.all if ex.channel is not None)
        # Each close waits for its worker's exit (a CUDA context taken down), hands its kernel cache's new
        # entries to the content's and has the pool remove its directories: one after the other, a second and
        # more for 12 workers before the speed run can begin (docs/measurements: submit latency on a GPU).
        # They share nothing, so they close side by side.
        live = [ex for ex in self.all if ex.channel is not None]
        if len(live) > 1:
            with ThreadPoolExecutor(len(live), thread_name_prefix="judge-worker-stop") as closing:
                list(closing.map(lambda ex: ex.stop(), live))
        else:
            for ex in live:
                ex.stop()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def timing(self) -> dict:
        """Their timing books added up (and how many there were, when more than one)."""
        out: dict = {}
        for ex in self.all:
            for k, v in ex.timing.items():
                out[k] = out.get(k, 0) + v
        if len(self.all) > 1:
            out["workers"] = len(self.all)
        if self.share_seconds:
            out["compile_share_seconds"] = round(self.share_seconds, 3)
        return out

    def output_text(self) -> str:
        return "\n".join(t for t in (ex.output_text() for ex in self.all) if t)[-8192:]
