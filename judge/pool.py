"""The worker pool: sandboxed workers that have imported torch and Triton before they are given a submission.

A worker's start is most of a verdict's fixed cost (importing torch and Triton, on a GPU creating the CUDA
context): seconds, for a submission whose cases may take less. ``judge grade`` and ``judge serve`` judge
many submissions, each in a job process of its own (judge.grading.job), so the pool lives in the driver
(the grade command, the service) and hands its workers to the jobs over a Unix socket:

* The driver's :class:`PoolServer` spawns workers through the same sandbox backends as a job does, with
  no submission: each gets the worker code and an empty submission directory (mounted read-only in
  bwrap and docker), and its "prepare" message (interpreter flag, device, GPU memory cap, its secret).
  It imports torch and Triton, wraps Triton's launchers, says "ready" and waits.
* A job's :class:`~judge.channel.WorkerChannel` asks :func:`take` for a worker of its kind first (the
  key: backend, entry module, device, GPU, interpreter flag and the limits the sandbox fixes when it
  starts: memory, processes, scratch, GPU memory, and whether a kernel cache is mounted). It gets the
  worker's three pipes (passed as file descriptors), its secret, and a connection over which it kills,
  waits for and measures the worker (the driver is its parent). Then, as for a worker it spawned itself,
  it copies the submission into the worker's submission directory and names it in "setup"; the worker
  takes the integrity snapshot, imports the submission and says "hello". Everything the worker says is
  parsed by judge.replies, as always. None to be had (the pool is off, empty, or has none of that kind):
  the job spawns one itself, as without a pool.
* One submission per worker: a worker is handed out once, and when its job closes it (or the job's
  connection drops) the driver kills it and removes its directories. Nothing of any submission has run
  in a worker before it is handed out: the pool only spawns, sends "prepare" and waits.

How many: for each kind, as many as one job has held at once (its parallel workers, its replay worker),
at most ``size`` (``--pool N``); a kind is learned from the first job that asks for it (that job starts
its own). Each taken worker is replaced at once, until the driver says no more jobs are coming
(:meth:`PoolServer.drain`). Where a job holds two or more of the submission's workers, they are forked as a
litter (judge.sandbox.litter): one import of torch for a job's worth, in one sandbox that the first job to
take one of them then has alone (:meth:`PoolServer._take`).

A GPU worker's kernel cache (judge.intake.kernel_cache: a directory per submission content) cannot be
known when the worker is spawned: a pooled worker gets a directory of its own, filled from the content's
cache when it is handed out and merged back (new entries only) when it is closed. Except in ``submit``'s
head start (:func:`head_start`), which spawns its workers for one known file: they mount that file's
content cache itself, as workers the session spawns do, and hand out only to a job of that cache.
"""

from __future__ import annotations

import json
import os
import queue
import secrets
import shutil
import socket
import stat
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

from judge import timeline
from judge.sandbox.base import REPLAY_MODULE, Job, Limits, Proc, make_cache
from judge.untrusted.compile_lock import LOCK_DIR

MAX_MESSAGE = 1 << 16
DEFAULT_SIZE = 4  # at most this many warm workers of each kind, unless --pool says otherwise
SPAWN_WAIT_SECONDS = 5.0  # head_start's wait for its spawns before the judge imports torch (they take ~0.05 s each)


# --------------------------------------------------------------------------- the key


def key_of(backend, job: Job) -> dict | None:
    """What a pooled worker must share with ``job`` to serve it: everything fixed when it is spawned. None for
    a backend the pool cannot rebuild (one not in judge.sandbox.BACKENDS, e.g. a test's fake)."""
    from judge.sandbox import BACKENDS, backend_class

    name = getattr(backend, "name", None)
    if name not in BACKENDS or not isinstance(backend, backend_class(name)):
        return None
    lim = job.limits
    key = {"backend": name, "module": job.module, "device": job.device, "gpu": job.gpu,
           "interpret": bool(job.interpret), "memory_mb": lim.memory_mb, "processes": lim.processes,
           "scratch_mb": lim.scratch_mb, "gpu_memory_mb": lim.gpu_memory_mb, "cache": job.cache is not None}
    if name == "docker":
        key["image"] = backend.image_for(job.device)
    return key


def _key_text(key: dict) -> str:
    return json.dumps(key, sort_keys=True)


def _backend_for(key: dict):
    from judge.sandbox import backend_class

    if key["backend"] == "docker":
        return backend_class("docker")(image=key["image"])
    return backend_class(key["backend"])()


def _template(key: dict, scratch: Path, cache: Path | None) -> Job:
    """The job a pooled worker is spawned for: no submission; the limits that the sandbox fixes at spawn (the
    others are the judge's own, applied from outside when the worker is used)."""
    limits = Limits(case_seconds=0.0, run_seconds=0.0, memory_mb=key["memory_mb"], output_bytes=0,
                    processes=key["processes"], scratch_mb=key["scratch_mb"], gpu_memory_mb=key["gpu_memory_mb"])
    return Job(submission=None, scratch=scratch, device=key["device"], interpret=key["interpret"], limits=limits,
               gpu=key["gpu"], module=key["module"], cache=cache)


# --------------------------------------------------------------------------- the driver's side


@dataclass(eq=False)
class _Entry:
    proc: Proc
    nonce: str
    home: Path  # the pool's directory for this worker: its scratch (process backend) and kernel cache
    cache: Path | None
    spawned: float
    placed: bool = False  # its submission is in its sandbox already (a litter's: judge.sandbox.litter)
    litter: object = None  # the judge.sandbox.litter.Litter it was forked in, if any

    def close(self) -> None:
        try:
            self.proc.kill()
            self.proc.wait(5)
        except Exception:  # noqa: BLE001 - already gone
            pass
        close = getattr(self.proc, "close", None)
        if close:
            try:
                close()
            except Exception:  # noqa: BLE001
                pass
        shutil.rmtree(self.home, ignore_errors=True)


class PoolServer:
    """The driver's pool: warm workers by kind, handed out over a Unix socket (``path``), one job each."""

    def __init__(self, size: int = DEFAULT_SIZE, log=None, litters: bool = True):
        self.size = max(0, int(size))
        self.log = log
        self.dir = Path(tempfile.mkdtemp(prefix="judge-pool-"))
        self.dir.chmod(0o700)  # the socket: the judge's jobs only
        self.path = str(self.dir / "pool.sock")
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._sock.bind(self.path)
        self._sock.listen(64)
        self._lock = threading.Lock()
        self._spawns_done = threading.Condition(self._lock)  # notified as each ordered spawn ends
        self._idle: dict[str, list[_Entry]] = {}
        self._spawning: dict[str, int] = {}
        self._keys: dict[str, dict] = {}
        self._target: dict[str, int] = {}
        # kind -> the one content cache its workers mount (warm(own_cache=True)); handed out only to a job
        # whose cache it is.
        self._fixed: dict[str, str] = {}
        # kind -> the one file its first workers are forked for, in one litter (warm(litter=True)); taken by
        # the fill that orders that litter. _litter_of keeps it for the spawn.
        self._litter_file: dict[str, Path] = {}
        self._litter_of: dict[str, Path] = {}
        # (kind, job pid) -> the idle children of the roster litter that job took a worker of (_take).
        self._claimed: dict[tuple[str, int], list[_Entry]] = {}
        self.litters = litters
        self._held: dict[tuple[str, int], int] = {}  # (kind, job pid) -> that job's workers of that kind now
        self._leased: set = set()
        self._draining = False
        self._closed = False
        self.stats = {"taken": 0, "missed": 0, "spawned": 0, "wasted": 0, "spawn_failed": 0, "litters": 0}
        self._thread = threading.Thread(target=self._accept, name="judge-pool", daemon=True)
        self._thread.start()
        # Workers are spawned from one thread that lives as long as the pool: bwrap's --die-with-parent (the
        # parent-death signal) fires when the *thread* that started it ends.
        self._orders: queue.Queue = queue.Queue()
        self._spawner = threading.Thread(target=self._spawn_loop, name="judge-pool-spawn", daemon=True)
        self._spawner.start()

    # ------------------------------------------------------------------ life

    def drain(self) -> None:
        """No more jobs are coming: spawn no more (the workers already warm stay for the jobs in flight)."""
        with self._lock:
            self._draining = True

    def close(self) -> None:
        """Kill every worker of the pool, idle or handed out, and remove the socket."""
        with self._lock:
            self._closed = True
            idle = [e for entries in (*self._idle.values(), *self._claimed.values()) for e in entries]
            self._idle.clear()
            self._claimed.clear()
            leased = list(self._leased)
        self.stats["wasted"] += len(idle)
        self._orders.put(None)
        try:
            self._sock.close()
        except OSError:
            pass
        for e in idle + leased:
            e.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    # ------------------------------------------------------------------ filling

    def warm(self, backend, job: Job, n: int = 1, own_cache: bool = False, litter: bool = False) -> bool:
        """Keep at least ``n`` workers of ``job``'s kind warm from now on (before any job asked for one); False
        for a backend the pool cannot rebuild. ``own_cache``: they mount ``job.cache`` itself (one file's
        content cache, shared by them all) and are handed only to a job of that cache. ``litter`` (with
        ``own_cache``: they serve ``job.submission`` alone): the ``n`` are forked in one sandbox from one
        process that imported torch for them all (judge.sandbox.litter), each handed to a job of that file."""
        key = key_of(backend, job)
        if key is None:
            return False
        kt = _key_text(key)
        if litter and own_cache and job.submission is not None and n >= 2:
            with self._lock:
                self._litter_file[kt] = self._litter_of[kt] = job.submission
        with self._lock:
            if own_cache and job.cache is not None and kt not in self._keys:
                try:
                    make_cache(job.cache, job.interpret, seed=key["backend"] != "docker")
                    self._fixed[kt] = str(job.cache)
                except OSError:
                    pass  # no such cache to share: each gets one of its own, as in any pool
            self._keys.setdefault(kt, key)
            self._target[kt] = max(self._target.get(kt, 0), min(self.size, n))
        self._fill(kt)
        return True

    def idle(self) -> int:
        """Workers spawned and not handed out yet (warm, or still importing)."""
        with self._lock:
            return sum(len(v) for v in self._idle.values())

    def _want(self, kt: str) -> int:
        """Workers of kind ``kt`` to spawn now: up to its target, counting those warm and on their way."""
        if self._draining or self._closed:
            return 0
        return max(0, self._target.get(kt, 0) - len(self._idle.get(kt, [])) - self._spawning.get(kt, 0))

    def _fill(self, kt: str) -> None:
        with self._lock:
            n = self._want(kt)
            if n and self._target.get(kt, 0) >= 2 and self._litters(kt):
                # A roster's litter is one job's (_take): a whole job's worth, even where fewer are missing
                # (the warm ones are then up to twice the target, until a job takes a litter whole).
                n = max(n, self._target[kt])
            self._spawning[kt] = self._spawning.get(kt, 0) + n
            # head_start's litter, once (its replacements are spawned one by one), or a roster's (_litters).
            litter = n >= 2 and (self._litter_file.pop(kt, None) or self._litters(kt))
        if litter:
            self._orders.put((kt, n))
            return
        for _ in range(n):
            self._orders.put(kt)

    def _spawn_loop(self) -> None:
        while True:
            kt = self._orders.get()
            if kt is None:
                return
            if isinstance(kt, tuple):
                self._spawn_litter(*kt)
            else:
                self._spawn_one(kt)

    def _litters(self, kt: str) -> bool:
        """(with the lock held) Whether a roster's workers of kind ``kt`` are spawned in litters: the submission's
        own workers (never the replay worker, which checks them), on a backend that has litters, with the pool
        serving jobs (not head_start's, which forks its one litter for its file)."""
        from judge.sandbox import litter

        key = self._keys.get(kt) or {}
        return (self.litters and key.get("module") == "judge.untrusted"
                and key.get("backend") in litter.BACKENDS and kt not in self._fixed)

    def _spawn_litter(self, kt: str, n: int) -> None:
        """``n`` workers of kind ``kt`` forked in one sandbox (judge.sandbox.litter); one by one where a litter
        cannot be had. head_start's is for the one file the kind was warmed for; a roster's for whichever job
        takes one of them first (_take), and for that job alone."""
        from judge.channel import prepare_message
        from judge.sandbox import litter
        from judge.shared import wire

        key, fixed = self._keys[kt], self._fixed.get(kt)
        submission = self._litter_of.get(kt)  # head_start's file; a roster's litter is placed when taken
        procs = None
        if not self._closed:
            home = Path(tempfile.mkdtemp(prefix="litter-", dir=self.dir))
            (home / "scratch").mkdir()
            # Its kernel cache: the file's content cache (head_start's), or one the children share, filled from
            # their job's content cache and merged back as any pooled worker's is (none in the interpreter).
            cache = Path(fixed) if fixed else home / "cache" if key["cache"] else None
            job = replace(_template(key, home / "scratch", cache), submission=submission)
            t_spawn = time.monotonic()
            procs = litter.spawn_litter(_backend_for(key), job, n, log=self.log)
            timeline.add("spawn a litter", t_spawn, time.monotonic(), module=str(key.get("module")), workers=n)
        if procs is None:
            if not self._closed:
                shutil.rmtree(home, ignore_errors=True)
            for _ in range(n):
                self._spawn_one(kt)
            return
        # Its scratch (the process backend's) and shared cache go when its last worker is closed: a service's
        # pool lives for days.
        procs[0].litter.on_close.append(lambda: shutil.rmtree(home, ignore_errors=True))
        entries = []
        for proc in procs:
            nonce = secrets.token_hex(16)
            entry = _Entry(proc, nonce, Path(tempfile.mkdtemp(prefix="w-", dir=self.dir)), cache,
                           time.monotonic(), placed=submission is not None, litter=proc.litter)
            try:
                wire.send(proc.stdin, dict(prepare_message(job, key["backend"]), nonce=nonce))
            except OSError:
                pass  # died at once: dropped when taken (_take), and the job spawns its own
            entries.append(entry)
        with self._lock:
            self._spawning[kt] -= n
            self._spawns_done.notify_all()
            closed = self._closed
            if not closed:
                self._idle.setdefault(kt, []).extend(entries)
                self.stats["spawned"] += n
                self.stats["litters"] += 1
        if closed:
            for e in entries:
                e.close()

    def _spawn_one(self, kt: str) -> None:
        from judge.channel import prepare_message
        from judge.shared import wire

        key = self._keys[kt]
        entry = None
        with self._lock:
            if self._closed:
                self._spawn_ended(kt)
                return
        try:
            home = Path(tempfile.mkdtemp(prefix="w-", dir=self.dir))
            scratch = home / "scratch"
            scratch.mkdir()
            fixed = self._fixed.get(kt)
            cache = Path(fixed) if fixed else home / "cache" if key["cache"] else None
            job = _template(key, scratch, cache)
            t_spawn = time.monotonic()
            proc = _backend_for(key).spawn(job)
            timeline.add("spawn a pooled worker", t_spawn, time.monotonic(), module=str(key.get("module")))
            nonce = secrets.token_hex(16)
            entry = _Entry(proc, nonce, home, cache, time.monotonic())
            wire.send(proc.stdin, dict(prepare_message(job, key["backend"]), nonce=nonce))
        except Exception as exc:  # noqa: BLE001 - the jobs start their own workers instead
            self.stats["spawn_failed"] += 1
            if entry is not None:
                entry.close()
            if self.log:
                self.log(f"worker pool: could not start a worker ({type(exc).__name__}: {exc})")
            with self._lock:
                self._spawn_ended(kt)
            return
        with self._lock:
            self._spawn_ended(kt)
            if self._closed:
                closed = True
            else:
                closed = False
                self._idle.setdefault(kt, []).append(entry)
                self.stats["spawned"] += 1
        if closed:
            entry.close()

    def _spawn_ended(self, kt: str) -> None:
        """(with the lock held) One ordered spawn of kind ``kt`` is over, made or failed."""
        self._spawning[kt] -= 1
        self._spawns_done.notify_all()

    def wait_spawned(self, timeout: float) -> bool:
        """Wait until every spawn ordered so far is over (at most ``timeout`` seconds); whether they are.

        head_start waits here before the judge imports torch. The spawns run in the pool's spawn thread,
        and while the main thread imports torch (Python holding the GIL nearly throughout) each spawn's
        Python steps wait their turn for it: on the H200 the nine spawns of a lone submit took 0.3-1.3 s each,
        one after the other, so the last test worker began importing about 3 s after the first and was
        handed over at 8.4 s against 5.3 s (tests/gpu/RESULTS.md, 2026-12-05 third session, call 2)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while any(self._spawning.values()):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._spawns_done.wait(left)
        return True

    def _take(self, kt: str, key: dict, owner: int, cache=None, submission: str | None = None) -> _Entry | None:
        """A warm worker of kind ``kt`` for job ``owner``: one of the litter that job holds (judge.sandbox.litter),
        else any other. A roster's litter is the first taker's alone from then on: its other children are kept
        for that job (and killed when it is done), and its file is placed in the sandbox now (``submission``,
        its host path; a job that does not name one takes no litter's worker)."""
        with self._lock:
            if self._closed:
                return None
            self._keys.setdefault(kt, key)
            held = self._held.get((kt, owner), 0) + 1
            self._held[(kt, owner)] = held  # (released when the job's connection ends, as for any miss)
            if kt in self._fixed and cache != self._fixed[kt]:
                self.stats["missed"] += 1  # its workers mount another file's cache: never this job's
                return None
            # One job's worth of this kind: as many as one job has held at once.
            self._target[kt] = min(self.size, max(self._target.get(kt, 0), held))
            found, dead = None, []
            mine = self._claimed.get((kt, owner), [])
            for entries in (mine, self._idle.get(kt, [])):
                kept = []
                while entries and found is None:
                    e = entries.pop(0)
                    if e.proc.wait(0) is not None:  # a worker that died while it waited is dropped
                        dead.append(e)
                    elif e.litter is not None and not e.placed and not submission:
                        kept.append(e)  # a roster's litter, for a job that names no file: not this one's
                    elif entries is mine and getattr(e.litter, "source", None) != submission:
                        kept.append(e)  # forked for another file this job judged (one process, two files)
                    else:
                        found = e
                entries[:0] = kept
                if found is not None:
                    break
            claim = found is not None and found.litter is not None and not found.placed
            if claim:  # its siblings are this job's from now on
                siblings = [e for e in self._idle.get(kt, []) if e.litter is found.litter]
                self._idle[kt] = [e for e in self._idle.get(kt, []) if e.litter is not found.litter]
                self._claimed.setdefault((kt, owner), []).extend(siblings)
            if found is not None:
                self._leased.add(found)
                self.stats["taken"] += 1
            else:
                self.stats["missed"] += 1
        for e in dead:  # here, not in a thread of its own: a driver that exits must not cut a cleanup short
            e.close()
        if claim:
            try:
                found.litter.place(Path(submission))
            except (OSError, RuntimeError) as exc:
                if self.log:
                    self.log(f"worker pool: could not place a file in a litter ({exc})")
                with self._lock:  # (the job's hold is released as for any miss, when its connection ends)
                    self._leased.discard(found)
                found.close()
                found = None
            else:
                with self._lock:
                    for e in [found, *self._claimed.get((kt, owner), [])]:
                        if e.litter is found.litter:
                            e.placed = True
        self._fill(kt)
        return found

    def _release(self, kt: str, owner: int, entry: _Entry | None) -> None:
        leftover = []
        with self._lock:
            n = self._held.get((kt, owner), 1) - 1
            if n > 0:
                self._held[(kt, owner)] = n
            else:
                self._held.pop((kt, owner), None)
                leftover = self._claimed.pop((kt, owner), [])  # its litter's children it did not take
                self.stats["wasted"] += len(leftover)
            if entry is not None:
                self._leased.discard(entry)
        for e in ([entry] if entry is not None else []) + leftover:
            e.close()

    # ------------------------------------------------------------------ serving

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), name="judge-pool-lease", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        """One connection: an "acquire", then (when a worker was handed out) that worker's operations until
        "close" or the connection drops; either way the worker is killed and its directories removed."""
        entry, kt, owner = None, None, 0
        try:
            request = _recv(conn)
            if not request or request.get("op") != "acquire" or not isinstance(request.get("key"), dict):
                return
            key, owner = request["key"], int(request.get("owner") or 0)
            kt = _key_text(key)
            entry = self._take(kt, key, owner, request.get("cache"), request.get("submission"))
            if entry is None:
                # The job starts its own; it keeps this connection open while that worker lives, so that the
                # pool counts it among the job's workers of this kind (how many to keep warm).
                conn.send(json.dumps({"ok": False}).encode())
                while _recv(conn) is not None:
                    pass
                return
            p = entry.proc
            reply = {"ok": True, "nonce": entry.nonce, "pid": p.pid,
                     "submission_dir": str(p.submission_dir) if p.submission_dir is not None else None,
                     "inside_dir": p.inside_dir, "cache": str(entry.cache) if entry.cache is not None else None,
                     "placed": p.submission_path if entry.placed else None,
                     "waited": round(time.monotonic() - entry.spawned, 3)}
            socket.send_fds(conn, [json.dumps(reply).encode()], [p.stdin, p.stdout, p.stderr])
            while True:
                request = _recv(conn)
                if request is None:
                    return
                if request.get("op") == "close":
                    # Killed and its directories removed before the job hears back: when a job's session
                    # ends, nothing of its workers is left.
                    self._release(kt, owner, entry)
                    kt = None
                    conn.send(json.dumps({"closed": True}).encode())
                    return
                conn.send(json.dumps(_operate(p, request)).encode())
        except (OSError, ValueError):
            pass
        except Exception as exc:  # noqa: BLE001 - a bug here must cost one job's worker, never the driver
            if self.log:
                self.log(f"worker pool: {type(exc).__name__}: {exc}")
        finally:
            if kt is not None:
                self._release(kt, owner, entry)
            try:
                conn.close()
            except OSError:
                pass


def _operate(proc: Proc, request: dict) -> dict:
    op = request.get("op")
    if op == "kill":
        proc.kill()
        return {"ok": True}
    if op == "wait":
        timeout = request.get("timeout")
        return {"code": proc.wait(None if timeout is None else min(float(timeout), 60.0))}
    if op == "memory":
        above = request.get("exact_above")
        return {"bytes": proc.memory_bytes(int(above) if isinstance(above, int) else None)}
    if op == "oom":
        return {"oom": bool(proc.oom_killed())}
    if op == "before_setup":
        before = getattr(proc, "before_setup", None)  # (a litter's child: into its own cgroup)
        if before is not None:
            before()
        return {"ok": True}
    return {"error": f"unknown operation {op!r}"}


def _recv(conn: socket.socket) -> dict | None:
    data = conn.recv(MAX_MESSAGE)
    if not data:
        return None
    return json.loads(data)


# --------------------------------------------------------------------------- the job's side


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
                return _recv(self._conn) or {}
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
                    _recv(self._conn)  # the pool has killed it and removed its directories
                except (OSError, ValueError):
                    pass
                self._conn.close()
        for fd in (self.stdin, self.stdout, self.stderr):
            try:
                os.close(fd)
            except OSError:
                pass


ENTRY_MAX_BYTES = 256 << 20  # a kernel variant's files (cubin, PTX, IR, metadata) are a few MiB at most
ENTRY_MAX_ITEMS = 64  # its files and directories
ENTRY_MAX_DEPTH = 4  # Triton's entries are flat: one directory of files
# What one copy_entries call copies at most, in entries and in bytes: 98's reference compiles about 550
# variants of a few hundred KiB each. A worker that filled its cache with thousands of entries of the
# largest size an entry may have would otherwise have the judge copy every one of them into the content's
# cache when it closed (PooledProc.close: noticed in the fifth session of 2026-12-05), and again into each
# next worker's.
COPY_MAX_ENTRIES = 4096
COPY_MAX_BYTES = 8 << 30
SPARSE_SLACK = 64 << 10  # a file may have this many bytes fewer on disk than its size (a tail, a hole) and be copied
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK  # (a FIFO put in a file's place never blocks us)


def entry_names(src: Path) -> list[str]:
    """The kernel-cache entries of ``src`` (Triton: one directory per kernel variant), leaving out names
    that are not whole entries: hidden temporaries (ours), Triton's own ``tmp.pid_*`` and the compile
    locks (judge.untrusted.compile_lock)."""
    try:
        names = os.listdir(src)
    except OSError:
        return []
    return [n for n in names if not n.startswith((".", "tmp.")) and n != LOCK_DIR]


STAGING_STALE_SECONDS = 600.0  # a staging directory untouched this long is a killed copy's (a copy takes seconds)


def sweep_staging(parent: Path, min_age: float = STAGING_STALE_SECONDS) -> list[Path]:
    """Remove the staging directories in ``parent`` (:func:`copy_entries`'s) that nothing has written for
    ``min_age`` seconds: a judge killed in the middle of a copy left its half-built entries there, never read
    (no entry name starts with a dot) and never removed. The ones it removed."""
    removed = []
    try:
        found = [p for p in parent.iterdir() if p.name.startswith(".staging-")]
    except OSError:
        return removed
    now = time.time()
    for path in found:
        try:
            st = path.lstat()
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and now - st.st_mtime >= min_age:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def copy_entries(src: Path, dest: Path, names: list[str] | None = None) -> int:
    """Kernel-cache entries of ``src`` (``names``, default all) that ``dest`` lacks, each copied whole
    under a temporary name and then renamed, so a reader never sees half of one. How many it copied.

    A worker writes its cache, and may still be changing it while this reads: ``src`` and every directory
    below it are opened without following links, and only regular files with no other name (a hard link
    could name a file of the host's) are taken, their bytes copied (never linked: a linked file would stay
    the worker's to rewrite after it was checked), at most ENTRY_MAX_ITEMS files and directories of
    ENTRY_MAX_BYTES in all, ENTRY_MAX_DEPTH deep. An entry with anything else in it (a link, a FIFO, a
    device), or that changes under the walk, is left out whole; the others are copied still. So nothing
    outside the worker's cache is ever read (a black-box attack of 2026-12-04 on the first version: a hard
    link and a linked ``src`` brought a host file in, deep nesting raised).

    ``dest`` may be mounted into a live worker too (a sibling's cache, a content cache): so each entry is
    built in a staging directory beside ``dest`` (its parent, which no sandbox mounts) and moved in by one
    rename, which replaces nothing (a name already there is skipped) and never follows a link the worker
    put in its way. Built inside ``dest`` (the first version), the worker could swap the half-built entry
    for a link to any host directory and have the rest written there, as the judge (a red-team helper,
    2026-12-05, under bwrap: a trusted cache's module replaced by its own bytes).

    At most COPY_MAX_ENTRIES entries and COPY_MAX_BYTES bytes in one call: the rest is left where it is (a
    kernel not copied is compiled again where it is needed)."""
    try:
        root = os.open(src, _DIR_FLAGS)
    except OSError:
        return 0
    copied = 0
    total = 0  # bytes copied so far
    staging = None
    try:
        for name in entry_names(src) if names is None else names:
            if copied >= COPY_MAX_ENTRIES or total >= COPY_MAX_BYTES:
                break
            target = dest / name
            if "/" in name or "\0" in name or name in ("", ".", "..") or os.path.lexists(target):
                continue
            try:
                fd = os.open(name, _DIR_FLAGS, dir_fd=root)
            except (OSError, ValueError):
                continue  # gone, or not a directory (a link included)
            done = False
            tmp = None
            try:
                if staging is None:
                    sweep_staging(dest.parent)
                    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=dest.parent))
                tmp = staging / name
                tmp.mkdir()
                budget = {"items": 0, "bytes": 0}
                if _copy_tree(fd, tmp, budget, 1):
                    # renameat2(RENAME_NOREPLACE) is not in Python: a directory renamed onto an existing
                    # non-empty directory or onto a non-directory fails, and the lexists check above
                    # leaves an empty one only to a race, where either copy is the same bytes.
                    os.rename(tmp, target)
                    done = True
                    copied += 1
                    total += budget["bytes"]
            except OSError:  # a sibling copied it first (the rename finds it there), or the disk is full
                pass
            finally:
                os.close(fd)
                if not done and tmp is not None:
                    shutil.rmtree(tmp, ignore_errors=True)
    finally:
        os.close(root)
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    return copied


def _copy_tree(src_fd: int, dest: Path, budget: dict, depth: int) -> bool:
    """Copy the directory open at ``src_fd`` into ``dest`` (made); False where it holds anything but
    directories and regular files of one name each, or goes past the budget or the depth."""
    if depth > ENTRY_MAX_DEPTH:
        return False
    for name in os.listdir(src_fd):
        st = os.stat(name, dir_fd=src_fd, follow_symlinks=False)
        budget["items"] += 1
        if budget["items"] > ENTRY_MAX_ITEMS:
            return False
        if stat.S_ISDIR(st.st_mode):
            fd = os.open(name, _DIR_FLAGS, dir_fd=src_fd)
            try:
                (dest / name).mkdir()
                if not _copy_tree(fd, dest / name, budget, depth + 1):
                    return False
            finally:
                os.close(fd)
        elif not (stat.S_ISREG(st.st_mode) and st.st_nlink == 1 and _copy_file(src_fd, name, st, dest / name, budget)):
            return False
    return True


def _copy_file(src_fd: int, name: str, seen, dest: Path, budget: dict) -> bool:
    """The bytes of the regular file ``name`` (the one lstat saw: ``seen``) into ``dest``, within the budget.

    Not a sparse one (fewer blocks on disk than its size needs, past SPARSE_SLACK): Triton writes none, and a
    worker's sparse files cost it no disk where their copies would cost the host theirs in full, in every
    sibling's cache (a red-team helper, 2026-12-05: 8 entries of no disk became 2048 MiB). A file system that
    compresses may make an honest file look sparse: it is then compiled again, not copied."""
    fd = os.open(name, _FILE_FLAGS, dir_fd=src_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (seen.st_dev, seen.st_ino) or st.st_nlink != 1:
            return False
        if st.st_blocks * 512 + SPARSE_SLACK < st.st_size:
            return False
        left = ENTRY_MAX_BYTES - budget["bytes"]
        with open(dest, "wb") as w:
            while True:
                chunk = os.read(fd, min(1 << 20, left + 1))
                if not chunk:
                    break
                left -= len(chunk)
                if left < 0:
                    return False
                w.write(chunk)
        budget["bytes"] = ENTRY_MAX_BYTES - left
        return True
    finally:
        os.close(fd)


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
        conn.send(json.dumps({"op": "acquire", "key": key, "owner": os.getpid(), "submission": str(job.submission),
                              "cache": str(job.cache) if job.cache is not None else None}).encode())
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


def parse_size(text: str) -> int:
    """``--pool``'s value: ``off`` (0), ``auto`` (DEFAULT_SIZE) or a whole number of warm workers per kind."""
    text = str(text).strip().lower()
    if text in ("off", "no", "0"):
        return 0
    if text in ("auto", "on", ""):
        return DEFAULT_SIZE
    n = int(text)
    if n < 0:
        raise ValueError("a negative size")
    return n


def head_start(problem, submission: Path, options) -> PoolServer | None:
    """Workers for one ``submit``, spawned before the judge imports torch.

    A worker's start is torch and Triton imported in a fresh process (on a GPU also its CUDA context); the
    judge's own process imports torch too before its session asks for a worker. Both can run at once: a pool
    of this command's own, holding the workers the session will ask for (its parallel workers and its replay
    worker), warmed now and drained at once (no replacements), hands them over when the session asks. The
    job is known without torch: on a GPU the device's memory, which sets how many workers, is read with
    nvidia-smi (judge.cli_common.gpu_memory_gib). A worker the session asks for and the pool lacks (a count
    that came out otherwise with torch) it starts itself; one warmed and never taken is killed at the end.
    None when there is nothing to gain or it cannot be had (an outer pool already serves this process, a
    sandbox the pool cannot rebuild, no Unix socket, a GPU whose memory cannot be read): the session then
    starts its own, as always.
    """
    from judge import intake
    from judge.options import limits_for, session_workers
    from judge.settings import settings

    if _socket or options.device not in ("cpu", "cuda") or getattr(problem, "kind", "kernel") != "kernel":
        return None
    gpu_gib = None
    if options.device == "cuda" and not options.workers and not settings().workers:
        from judge.cli_common import gpu_memory_gib

        gpu_gib = gpu_memory_gib(options.gpu)
        if gpu_gib is None:
            return None
    try:
        backend, _ = intake.backend_for(options.sandbox, options.device)
    except Exception:  # noqa: BLE001 - the session says why, as it would without this
        return None
    job = Job(submission=submission, scratch=Path(tempfile.gettempdir()), device=options.device,
              interpret=options.interpret, limits=limits_for(problem, options), gpu=options.gpu,
              cache=intake.kernel_cache(submission, options.device, options.interpret))
    if key_of(backend, job) is None:
        return None
    count = session_workers(problem, options, gpu_gib)  # as many as the session will ask for
    if options.device == "cuda":
        # On a GPU their memory first (judge.gpu_admission), at once or never: a head start waits for no one,
        # and its workers' CUDA contexts must not come before another judge's promise. The session takes it.
        from judge.gpu_claim import GpuClaim, Refused, hand_over
        from judge.options import no_speed_run, replay_workers

        replays = replay_workers(options.device, options.interpret, lone=True) if options.replay else 0
        claim = GpuClaim(options, job.limits, speed=no_speed_run(problem, options) is None, speed_replays=replays)
        try:
            count = claim.start(count, replays, block=False)
        except Refused:
            return None  # (the session says so)
        if claim.on and not count:
            return None
        hand_over(claim)
    try:
        # What goes wrong in it (a litter whose parent failed, a spawn that failed) is said on stderr: the
        # session then starts those workers itself, and the command is only slower.
        server = PoolServer(size=max(count, 1), log=lambda line: print(f"judge: {line}", file=sys.stderr))
    except OSError:
        return None
    # They are this file's alone, so they mount its content cache itself, as the session's own workers would:
    # a kernel variant one of them compiles is there for the others, and two that need it at once compile it
    # once (judge.untrusted.compile_lock) instead of once each in caches of their own (the first wave of
    # cases; 98's reference, 2026-12-04: 488 compiles and loads for about 222 variants). The replay worker
    # keeps a cache of its own (judge.replay). They are forked as a litter (judge.sandbox.litter).
    server.warm(backend, job, n=count, own_cache=True, litter=True)
    if options.replay:
        server.warm(backend, replace(job, module=REPLAY_MODULE))
    server.drain()
    # The judge's torch import waits for the spawns (wait_spawned says why).
    server.wait_spawned(timeout=SPAWN_WAIT_SECONDS)
    use(server.path)
    return server


def end_head_start(server: PoolServer | None) -> None:
    from judge.gpu_claim import drop_handed

    drop_handed()  # (a claim no session took: the command failed before its session)
    if server is not None:
        use(None)
        server.close()
