"""The driver's side of the worker pool (judge.pool): warm workers by kind, handed out over a Unix socket."""

from __future__ import annotations

import json
import queue
import secrets
import shutil
import socket
import tempfile
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

from judge import timeline
from judge.pool.key import backend_class_of, backend_for, key_of, key_text, recv, template
from judge.sandbox.base import Job, Proc, make_cache

DEFAULT_SIZE = 4  # at most this many warm workers of each kind, unless --pool says otherwise


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
        kt = key_text(key)
        if litter and own_cache and job.submission is not None and n >= 2:
            with self._lock:
                self._litter_file[kt] = self._litter_of[kt] = job.submission
        with self._lock:
            if own_cache and job.cache is not None and kt not in self._keys:
                try:
                    make_cache(job.cache, job.interpret, seed=backend.worker_uid is None)
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
        key = self._keys.get(kt) or {}
        backend = backend_class_of(key) if key else None
        return (
            self.litters
            and key.get("module") == "judge.untrusted"
            and backend is not None
            and backend.litters
            and kt not in self._fixed
        )

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
            job = replace(template(key, home / "scratch", cache), submission=submission)
            t_spawn = time.monotonic()
            backend = backend_for(key)
            procs = litter.spawn_litter(backend, job, n, log=self.log)
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
            entry = _Entry(
                proc,
                nonce,
                Path(tempfile.mkdtemp(prefix="w-", dir=self.dir)),
                cache,
                time.monotonic(),
                placed=submission is not None,
                litter=proc.litter,
            )
            try:
                wire.send(proc.stdin, dict(prepare_message(job, backend), nonce=nonce))
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
            job = template(key, scratch, cache)
            t_spawn = time.monotonic()
            backend = backend_for(key)
            proc = backend.spawn(job)
            timeline.add("spawn a pooled worker", t_spawn, time.monotonic(), module=str(key.get("module")))
            nonce = secrets.token_hex(16)
            entry = _Entry(proc, nonce, home, cache, time.monotonic())
            wire.send(proc.stdin, dict(prepare_message(job, backend), nonce=nonce))
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
        Python steps wait their turn for it: a lone submit's spawns went one after the other, and its last
        test worker began importing seconds after the first (docs/measurements: worker starts)."""
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
            request = recv(conn)
            if not request or request.get("op") != "acquire" or not isinstance(request.get("key"), dict):
                return
            key, owner = request["key"], int(request.get("owner") or 0)
            kt = key_text(key)
            entry = self._take(kt, key, owner, request.get("cache"), request.get("submission"))
            if entry is None:
                # The job starts its own; it keeps this connection open while that worker lives, so that the
                # pool counts it among the job's workers of this kind (how many to keep warm).
                conn.send(json.dumps({"ok": False}).encode())
                while recv(conn) is not None:
                    pass
                return
            p = entry.proc
            reply = {
                "ok": True,
                "nonce": entry.nonce,
                "pid": p.pid,
                "submission_dir": str(p.submission_dir) if p.submission_dir is not None else None,
                "inside_dir": p.inside_dir,
                "cache": str(entry.cache) if entry.cache is not None else None,
                "placed": p.submission_path if entry.placed else None,
                "waited": round(time.monotonic() - entry.spawned, 3),
            }
            socket.send_fds(conn, [json.dumps(reply).encode()], [p.stdin, p.stdout, p.stderr])
            while True:
                request = recv(conn)
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
