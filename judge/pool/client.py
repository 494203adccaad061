"""The job's side of the worker pool (judge.pool): a worker taken from the driver's pool, and the proxy through
which the job kills it, waits for it and measures it."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from judge.pool.copies import copy_entries
from judge.pool.key import MAX_MESSAGE, key_of, recv
from judge.sandbox.base import Job, Proc


@dataclass
class Lease:
    """What the pool answered: a worker (``proc``, its secret ``nonce``), or none (``proc`` None: the job starts
    its own, and closes the lease when that worker is closed)."""

    nonce: str = ""
    proc: Proc | None = None
    conn: socket.socket | None = None

    def close(self) -> None:
        if self.proc is None and self.conn is not None:
            try:
                self.conn.close()
            except OSError:
                pass
            self.conn = None


class PooledProc(Proc):
    """A worker the pool spawned, as the job sees it: its pipes are the job's own (passed over the socket);
    the pool, its parent, kills it, waits for it and reads its memory when the job asks."""

    def __init__(self, conn: socket.socket, fds: list[int], reply: dict, cache: Path | None):
        self._conn = conn
        self._lock = threading.Lock()
        self.pid = int(reply["pid"])
        self.stdin, self.stdout, self.stderr = fds
        self.submission_path = ""
        self.submission_dir = Path(reply["submission_dir"]) if reply.get("submission_dir") else None
        self.inside_dir = reply.get("inside_dir") or ""
        self.placed = str(reply.get("placed") or "")  # a litter's worker: its file is in its sandbox already
        self.worker_cache = Path(reply["cache"]) if reply.get("cache") else None
        self.content_cache = cache
        self.waited = float(reply.get("waited") or 0.0)
        self._closed = False
        if self.worker_cache is not None and cache is not None:
            if self.worker_cache == Path(cache):
                self.worker_cache = None  # it mounts the content's cache itself (head_start): nothing to copy
            else:
                copy_entries(cache, self.worker_cache)

    def _ask(self, request: dict) -> dict:
        with self._lock:
            if self._closed:
                return {}
            try:
                self._conn.send(json.dumps(request).encode())
                return recv(self._conn) or {}
            except (OSError, ValueError):
                return {}

    def place(self, submission: Path) -> str:
        if self.placed:  # a litter's: take() checked that its file is ``submission``
            self.submission_path = self.placed
            return self.placed
        return super().place(submission)

    def kill(self) -> None:
        self._ask({"op": "kill"})

    def before_setup(self) -> None:
        if self.placed:  # (a litter's child: the pool puts it in a cgroup of its own first)
            self._ask({"op": "before_setup"})

    def wait(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:  # the pool waits at most a minute per question
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            reply = self._ask({"op": "wait", "timeout": 60.0 if left is None else left})
            if "code" not in reply:
                return None  # the pool is gone
            if reply["code"] is not None or (deadline is not None and time.monotonic() >= deadline):
                return reply["code"]

    def memory_bytes(self, exact_above=None):
        return self._ask({"op": "memory", "exact_above": exact_above}).get("bytes")

    def oom_killed(self) -> bool:
        return bool(self._ask({"op": "oom"}).get("oom"))

    def close(self) -> None:
        if self.worker_cache is not None and self.content_cache is not None:
            try:
                self.content_cache.mkdir(parents=True, exist_ok=True)
                copy_entries(self.worker_cache, self.content_cache)
            except OSError:
                pass  # a cache is a saving, never a condition
        with self._lock:
            if not self._closed:
                self._closed = True
                try:
                    self._conn.settimeout(60)
                    self._conn.send(json.dumps({"op": "close"}).encode())
                    recv(self._conn)  # the pool has killed it and removed its directories
                except (OSError, ValueError):
                    pass
                self._conn.close()
        for fd in (self.stdin, self.stdout, self.stderr):
            try:
                os.close(fd)
            except OSError:
                pass


_socket: str | None = None  # the socket of the pool this process takes its workers from (use)


def use(socket_path: str | None) -> None:
    """Take this process's workers from the pool serving at ``socket_path`` from now on (None: from none).
    A job process is told its driver's on its command line (judge.grading.job), a ``submit`` child of
    ``selftest --pool`` by --pool-socket; a head start (below) serves its own process."""
    global _socket
    _socket = socket_path


def serving() -> str | None:
    """The socket of the pool this process takes its workers from (None: none)."""
    return _socket


def take(backend, job: Job) -> Lease | None:
    """A warm worker for ``job`` from this process's pool (:func:`use`); a Lease without one when the pool has
    none of this kind warm; None with no pool (or one that does not answer). Without a worker the caller
    spawns its own."""
    path = _socket
    if not path or job.submission is None:
        return None
    key = key_of(backend, job)
    if key is None:
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        conn.settimeout(10)
        conn.connect(path)
        conn.send(
            json.dumps(
                {
                    "op": "acquire",
                    "key": key,
                    "owner": os.getpid(),
                    "submission": str(job.submission),
                    "cache": str(job.cache) if job.cache is not None else None,
                }
            ).encode()
        )
        data, fds, _, _ = socket.recv_fds(conn, MAX_MESSAGE, 3)
        reply = json.loads(data) if data else {}
        if not reply.get("ok") or len(fds) != 3:
            for fd in fds:
                os.close(fd)
            conn.settimeout(None)
            return Lease(conn=conn)  # none warm: the caller spawns its own
        conn.settimeout(None)
    except (OSError, ValueError):
        conn.close()
        return None
    proc = PooledProc(conn, fds, reply, job.cache)
    if proc.placed:
        from judge.sandbox.litter import same_file

        if not same_file(Path(job.submission), proc.submission_dir, proc.placed):
            # A litter's worker, forked for another file (head_start's pool serves one): not this job's.
            proc.close()
            return None
    return Lease(nonce=str(reply["nonce"]), proc=proc, conn=conn)
