"""The process backend: a plain child process with rlimits and the judge's timers.

Nothing is isolated: the submission runs as you, sees your files and your
network. It is for practising on your own code; use docker or bwrap for
anybody else's.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys

from judge.sandbox.base import Backend, Job, Proc, prepare_cache, process_tree_memory, worker_env
from judge.sandbox.staging import CODE_ROOT


class _ChildProc(Proc):
    def __init__(self, popen: subprocess.Popen, submission_path: str):
        self.popen = popen
        self.pid = popen.pid
        self.stdin = popen.stdin.fileno()
        self.stdout = popen.stdout.fileno()
        self.stderr = popen.stderr.fileno()
        self.submission_path = submission_path

    def kill(self) -> None:
        # The worker leads its own session: kill everything it started too. (Not once reaped: its number
        # may be another's.)
        for target in (lambda: os.killpg(self.pid, signal.SIGKILL), lambda: self.popen.kill()):
            if self.popen.returncode is not None:
                break
            try:
                target()
            except (ProcessLookupError, PermissionError):
                pass

    def wait(self, timeout=None):
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def memory_bytes(self, exact_above=None):
        return process_tree_memory(self.pid, exact_above)

    def close(self):
        for stream in (self.popen.stdin, self.popen.stdout, self.popen.stderr):
            try:
                stream.close()
            except OSError:
                pass


def _set_limits(job: Job):
    def apply():
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (256 << 20, 256 << 20))
        if job.device == "cpu":
            # CUDA reserves huge virtual ranges, so an address-space cap is only
            # safe without a GPU; with one, the judge's RSS watchdog enforces it.
            cap = (job.limits.memory_mb << 20) + (8 << 30)
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    return apply


class ProcessBackend(Backend):
    name = "process"
    summary = "a plain child process: isolates nothing"
    isolated = False
    litters = True
    lowers_priority = True
    worker_uid = None

    def caveat(self) -> str | None:
        return "sandbox 'process': the submission ran as you, with nothing isolated (use it for your own code)"

    def spawn(self, job: Job, *, extra_fds=(), args=(), share: int = 1) -> Proc:
        prepare_cache(job)
        env = worker_env(
            job,
            code_root=str(CODE_ROOT),
            scratch=str(job.scratch),
            cache=str(job.cache) if job.cache is not None else None,
        )
        popen = subprocess.Popen(
            [sys.executable, "-P", "-m", job.module, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=job.scratch,
            env=env,
            start_new_session=True,
            preexec_fn=_set_limits(job),
            pass_fds=tuple(extra_fds),
        )
        # A pooled worker (no submission yet) is told its file's host path in "setup" (Proc.place).
        return _ChildProc(popen, str(job.submission.resolve()) if job.submission is not None else "")
