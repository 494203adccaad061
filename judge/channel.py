"""The judge's end of one untrusted worker: start it, send requests, receive parsed replies, enforce limits.

This is the trust boundary in code: every message from the worker comes in
through :meth:`WorkerChannel.receive`, which checks the per-run secret and
hands the message to a parser of judge.replies; a reply that does not parse
kills the worker and becomes ``WorkerDied("protocol")`` (RJ), never an
exception of the judge's. Limits are enforced from here, outside the worker:
a wall-clock deadline on every reply, a cap on what the worker prints (drained
on a thread), and a memory watchdog. When a worker dies or is killed, the
reason is recorded as data (``WorkerDied.reason``; judge.rules maps it to a
verdict) and the session starts a fresh one.
"""

from __future__ import annotations

import os
import secrets
import threading
import time

from judge import kernel_store, starvation
from judge.replies import fields, parsers, records
from judge.sandbox import Backend, Job
from judge.sandbox import base as sandbox_base
from judge.sandbox.base import signal_name
from judge.shared import wire

KEEP_OUTPUT = 16 << 10  # bytes of the submission's prints kept for the report
# How long the worker may take to import torch and Triton, before any of the submission runs. This is
# the judge's own environment, not the submission's time: the submission's import has its own limit
# (Limits.startup_seconds), counted from the worker's "ready". On a loaded host (CI's 2 cores under
# pytest -n, each test starting workers) importing torch alone took over 20 s, and a shortened
# startup limit then turned a submission that hangs at import from TLE into IE.
ENVIRONMENT_SECONDS = 300.0


class WorkerDied(Exception):
    """The worker stopped answering. ``reason``: timeout, memory, output, crash, protocol, or starved (its
    time ran out while the host, not the worker, used it: judge.starvation)."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


class WorkerStartFailed(Exception):
    """The worker died before the submission was even imported: the judge's environment is broken."""


def prepare_message(job: Job, backend: Backend) -> dict:
    """What a worker must know before it imports torch and Triton ("prepare"): nothing of the submission. A
    pooled worker (judge.pool) gets it when it is spawned; the settings in it are part of the pool's key
    (but whether it starts at the lowest CPU priority, decided then: judge.sandbox.base.yields_cores)."""
    return {
        "type": "prepare",
        "version": wire.PROTOCOL_VERSION,
        "device": job.device,
        "interpret": job.interpret,
        "gpu_memory_mb": job.limits.gpu_memory_mb,
        "yield_cores": sandbox_base.yields_cores(job, backend),
        "yield_seconds": sandbox_base.YIELD_SECONDS,
    }


class WorkerChannel:
    """One worker for one submission: spawned now, or taken from the worker pool (judge.pool) when one is on
    and holds a worker started for the same kind of job; either way it serves this job alone."""

    def __init__(self, backend: Backend, job: Job):
        from judge.pool.client import take

        self.job = job
        self.limits = job.limits
        self._unsent: Exception | None = None
        self._exit_sent = False
        lease = take(backend, job)
        self._lease = lease
        self.pooled = lease is not None and lease.proc is not None
        if self.pooled:
            # Spawned earlier, given its "prepare" then; it has imported torch and Triton or is doing so.
            self.nonce, self.proc = lease.nonce, lease.proc
        else:
            self.nonce = secrets.token_hex(16)
            try:
                self.proc = backend.spawn(job)
            except BaseException:
                if lease is not None:
                    lease.close()
                raise
            message = dict(prepare_message(job, backend), nonce=self.nonce)
            try:  # sent at once, so that it imports torch while the judge goes on
                wire.send(self.proc.stdin, message)
            except OSError as exc:  # it died at once: said when the judge waits for it
                self._unsent = exc
        for fd in (self.proc.stdin, self.proc.stdout):  # big outputs cross in 1 MiB writes, not 64 KiB
            wire.widen_pipe(fd)
        self.reader = wire.Reader(self.proc.stdout)
        self.printed = bytearray()
        self.printed_total = 0
        self.killed_for: tuple[str, str] | None = None
        self._deadline: starvation.Deadline | None = None  # the last wait's (whether the host starved it)
        self.peak_memory = 0
        self._done = threading.Event()
        self._threads = [
            threading.Thread(target=self._drain_stderr, daemon=True),
            threading.Thread(target=self._watch_memory, daemon=True),
        ]
        for t in self._threads:
            t.start()
        self.hello: records.Hello | None = None

    # ------------------------------------------------------------------ watchdogs

    def _kill(self, reason: str, detail: str) -> None:
        if self.killed_for is None:
            self.killed_for = (reason, detail)
        self.proc.kill()

    def _drain_stderr(self) -> None:
        fd = self.proc.stderr
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                return
            if not chunk:
                return
            self.printed_total += len(chunk)
            room = KEEP_OUTPUT - len(self.printed)
            if room > 0:
                self.printed += chunk[:room]
            if self.printed_total > self.limits.output_bytes:
                self._kill("output", f"printed more than {self.limits.output_bytes} bytes")

    def _watch_memory(self) -> None:
        limit = self.limits.memory_mb << 20
        # The worker's kernel cache (a pooled worker's own, else the content's): the one host directory it
        # may write, watched so that it cannot fill the host's disk (judge.kernel_store).
        # Files it removed while it keeps them open take the disk too, unseen by a walk: counted from its
        # processes' open files each WATCH_EVERY_SECONDS.
        cache = getattr(self.proc, "worker_cache", None) or self.job.cache
        dev = kernel_store.device_of(cache) if cache is not None else None
        next_look = 0.0
        try:
            while not self._done.wait(0.1):
                if cache is None:
                    why = None
                else:
                    if dev is not None and time.monotonic() >= next_look:
                        next_look = time.monotonic() + kernel_store.WATCH_EVERY_SECONDS
                        kernel_store.report_unnamed(cache, self, kernel_store.unnamed_bytes(self.proc.pids(), dev))
                    why = kernel_store.too_much(cache)
                if why is not None:
                    self._kill("output", f"{why} (Triton's compiled kernels take a few hundred MB)")
                    break
                # Exact (PSS) from half the limit up; below it a cheap upper bound, which keeps the peak
                # under half the limit too (what _pressed_against_memory_limit reads is exact near the cap).
                used = self.proc.memory_bytes(exact_above=limit // 2)
                if used is None:
                    continue
                self.peak_memory = max(self.peak_memory, used)
                if used > limit:
                    self._kill(
                        "memory", f"used {used >> 20} MiB of host memory; the limit is {self.limits.memory_mb} MiB"
                    )
                    return
        finally:
            if cache is not None:
                kernel_store.report_unnamed(cache, self, None)  # (ended: its open files are gone)

    # ------------------------------------------------------------------ protocol

    def _pressed_against_memory_limit(self) -> str | None:
        """Why a worker out of time is an MLE: it holds nearly all of its memory. Near a cgroup's
        cap the kernel reclaims pages instead of killing at once, and on a busy host that stall
        can outlast the case's time (seen in CI: two memory bombs side by side ended TLE)."""
        limit = self.limits.memory_mb << 20
        used = self.proc.memory_bytes()
        used = max(used or 0, self.peak_memory)
        if used >= 0.95 * limit:
            return (
                f"used {used >> 20} MiB of host memory, against its limit of {self.limits.memory_mb} MiB, "
                "when its time ran out (near its cap the kernel reclaims pages rather than kill at once)"
            )
        return None

    def _died(self, exc: Exception) -> WorkerDied:
        if isinstance(exc, wire.ChannelTimeout):
            pressed = self._pressed_against_memory_limit()
            if pressed is not None:
                self._kill("memory", pressed)
            deadline = self._deadline
            if deadline is not None and deadline.starved():
                self._kill(
                    "starved",
                    f"the host kept the worker from a core: it waited {deadline.waited:.1f} s of "
                    f"{time.monotonic() - deadline.start:.1f} s for one, and its own time stayed under the "
                    f"limit of {deadline.limit:g} s",
                )
            self._kill("timeout", str(exc))
        elif isinstance(exc, wire.OutputLimitExceeded):
            self._kill("output", str(exc))
        code = self.proc.wait(timeout=5)
        if self.killed_for is not None:
            return WorkerDied(*self.killed_for)
        if isinstance(exc, wire.ChannelClosed):
            if self.proc.oom_killed():
                return WorkerDied("memory", "killed by the out-of-memory killer")
            if code is None:
                self.proc.kill()
                return WorkerDied("crash", "the worker closed its channel but kept running")
            if code < 0:
                return WorkerDied("crash", f"the process was killed by {signal_name(-code)}")
            if code == wire.EXIT_CHANNEL_REDIRECTED:
                return WorkerDied("protocol", "the worker's reply channel was redirected: its replies were forged")
            return WorkerDied("crash", f"the process exited with status {code} in the middle of a case")
        self._kill("protocol", str(exc))
        return WorkerDied("protocol", f"the worker's reply was not valid: {exc}")

    def _recv(self, timeout: float, max_bytes: int, stretch: float = starvation.STRETCH):
        self._deadline = deadline = starvation.Deadline(timeout, self.proc.pids, stretch=stretch)
        try:
            message, payloads = self.reader.recv(max_bytes, deadline)
        except (wire.ProtocolError, OSError) as exc:
            raise self._died(exc) from None
        if message.get("nonce") != self.nonce:
            self._kill("protocol", "a reply did not carry this run's secret")
            raise WorkerDied("protocol", "a reply did not carry this run's secret (forged or corrupt)")
        return message, payloads

    def _send(self, message: dict, tensors=None) -> None:
        message["nonce"] = self.nonce
        try:
            wire.send(self.proc.stdin, message, tensors)
        except OSError as exc:
            raise self._died(wire.ChannelClosed(str(exc))) from None

    def start(
        self, *, submission_entry: str, arity: int, threads: int | None, calls: dict | None = None
    ) -> records.Hello:
        self.begin(submission_entry=submission_entry, arity=arity, threads=threads, calls=calls)
        return self.finish_start()

    def begin(self, *, submission_entry: str, arity: int, threads: int | None, calls: dict | None = None) -> None:
        """Give the worker its submission without waiting: the file is placed where the worker's sandbox shows
        it (read-only), then named in "setup". The worker reads it once its environment is up ("ready").
        ``calls``: what the problem's calls need in the worker (judge.calls.worker_setup).

        A worker found dead here never read its submission's name (the "prepare" or the "setup" could not be
        written to it): its environment failed, not the submission, so it is WorkerStartFailed, as a death
        before "ready" is in finish_start. (Which of the two catches a worker that dies at once is a race:
        a test saw both.)"""
        try:
            if self._unsent is not None:
                raise self._died(wire.ChannelClosed(str(self._unsent)))
            if not self.proc.submission_path:
                self.proc.place(self.job.submission)
            before = getattr(self.proc, "before_setup", None)  # (a litter's child: into its own cgroup first)
            if before is not None:
                before()
            self._send(
                {
                    **(calls or {}),
                    "type": "setup",
                    "submission": self.proc.submission_path,
                    "entry": submission_entry,
                    "arity": arity,
                    "threads": threads,
                }
            )
        except WorkerDied as died:
            raise WorkerStartFailed(f"the worker could not start ({died.detail}): {self._last_line()}") from None

    def finish_start(self) -> records.Hello:
        """Wait for the worker's ready (its environment: torch and Triton imported), then its hello (the
        submission imported, within the submission's startup limit)."""
        deadline = self.limits.startup_seconds
        try:
            message, _ = self._recv(max(deadline, ENVIRONMENT_SECONDS), 0)
        except WorkerDied as died:
            if died.reason in ("crash", "protocol", "timeout", "starved"):
                raise WorkerStartFailed(f"the worker could not start ({died.detail}): {self._last_line()}") from None
            raise
        if message.get("type") != "ready":
            raise WorkerStartFailed("the worker did not report ready")
        self.hello = self.receive(parsers.parse_hello, timeout=deadline, max_bytes=0)
        return self.hello

    def _last_line(self) -> str:
        time.sleep(0.2)  # let the stderr thread drain what the dying worker printed
        lines = [ln for ln in self.printed.decode("utf-8", errors="replace").splitlines() if ln.strip()]
        return lines[-1].strip() if lines else "it printed nothing"

    def send_case(self, message: dict, tensors) -> None:
        """Send a request; the judge computes its expected answers while the worker runs."""
        self._send(message, tensors)

    def receive(self, parse, *, timeout: float, max_bytes: int, stretch: float = starvation.STRETCH, **expect):
        """The next reply, parsed by ``parse`` (a judge.replies parser) into a typed record. ``timeout`` counts
        the worker's own time: time the host kept it from a core moves the deadline on, up to ``stretch`` times
        ``timeout`` (judge.starvation; 1: a plain wall-clock deadline).

        A reply that does not parse is a worker that broke the protocol: it is
        killed, and the caller gets WorkerDied("protocol") like any other death.
        """
        message, payloads = self._recv(timeout, max_bytes, stretch)
        try:
            return parse(message, payloads, **expect)
        except fields.MalformedReply as exc:
            self._kill("protocol", f"a malformed reply: {exc}")
            raise WorkerDied("protocol", f"the worker's reply was not valid: {exc}") from None

    def request_exit(self) -> None:
        """Ask the worker to exit, without waiting for it (see request_exits)."""
        if not self._exit_sent and self.proc.wait(timeout=0) is None:
            self._exit_sent = True
            try:
                self._send({"type": "exit"})
            except WorkerDied:
                pass

    def close(self) -> None:
        if self.proc.wait(timeout=0) is None:
            self.request_exit()
            if self.proc.wait(timeout=2) is None:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self._done.set()
        for t in self._threads:
            t.join(timeout=2)  # the stderr pipe ends with the process; then its fd may close
        close = getattr(self.proc, "close", None)
        if close:
            close()
        if self._lease is not None:
            self._lease.close()
        if self.job.cache is not None:
            kernel_store.collect_socket_garbage()

    def output_text(self) -> str:
        text = self.printed.decode("utf-8", errors="replace")
        if self.printed_total > len(self.printed):
            text += f"\n[... {self.printed_total - len(self.printed)} more bytes not shown]"
        return text


def request_exits(channels) -> None:
    """Ask each worker to exit, without waiting: to stop several, ask them all, then close each, so that their
    exits run at once (a GPU worker's takes its CUDA context down; one after the other, those waits add up)."""
    for channel in channels:
        try:
            channel.request_exit()
        except Exception:  # noqa: BLE001 - closing is best effort
            pass
