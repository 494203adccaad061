"""The judge's side of a litter (judge.untrusted.litter): several workers of one submission forked, in one
sandbox, from one process that imported torch and Triton for them all.

:func:`spawn_litter` makes each child's three pipes, starts the litter's parent through the backend (one that
declares ``litters``: bwrap, process) with those pipes passed in, and gives back one :class:`LitterProc` per
child, which the judge uses as it uses any worker: "prepare" to its stdin, replies from its stdout
(judge.channel), its prints drained from its stderr. What differs is underneath:

* **One sandbox.** The children share its file system, its PID namespace and its cgroup (sized for all of
  them: each child's memory and processes, times the number of children). They run one submission, the file
  placed in the sandbox before the parent starts (so :meth:`LitterProc.place` only checks that the judge asks
  for that file). Nothing of another submission, and no replay worker (judge.replay), ever shares it.
* **A cgroup per child.** The judge finds each child's PID on the host itself, among the sandbox's processes
  (the parent reports the child's PID as the sandbox numbers it), as soon as the parent says it forked it,
  and moves it into a cgroup of its own inside the litter's, with one worker's caps on memory and processes,
  before the child is given its submission (:meth:`LitterProc.before_setup`). So one child's memory is read
  from its cgroup, as a lone worker's is, and a child that forks without end fills its own process cap, not
  its siblings'. (Without cgroups, the caps are the litter's and a child's memory is its processes' sum.)
* **Killing one child** kills its session (each child leads one) and everything in its cgroup, by their PIDs
  on the host: a child is killed without touching its siblings, with whatever it forked, in its session or
  out of it. The last child closed takes the sandbox down, and with it whatever any child left running.
* **How a child ended** comes from the parent, which reaps it. The parent shares the sandbox with the
  children, so a child could forge that line: it would forge its own end, as an ordinary worker can choose
  its own exit status. A report that does not parse, or the parent's end, ends every child still running.

None is returned where a litter cannot be had (a backend that cannot pass pipes in, the parent failing before
it forks); the caller spawns its workers one by one, as without a litter.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import threading
import time
from dataclasses import replace
from pathlib import Path

from judge.sandbox.base import Job, Proc, process_tree_memory

MODULE = "judge.untrusted.litter"
MAX_LINE = 4096
FIND_SECONDS = 2.0  # how long a kill looks for a child it cannot find among the sandbox's processes
REPORT_SECONDS = 1.0  # how long after the host saw a child end its parent has to say how


class Litter:
    """The sandbox and its parent process; its children are :attr:`procs`."""

    def __init__(self, backend, job: Job, n: int, log=None):
        self.n = n
        self.log = log
        self._lock = threading.Lock()
        self._ended = threading.Event()  # the parent's reports are over (it exited, or spoke out of turn)
        self._forked = threading.Event()  # every child forked, or the litter failed first
        self._status: dict[int, int] = {}  # child -> how it ended
        self._nspid: dict[int, int] = {}  # child -> its PID inside the sandbox
        self._hostpid: dict[int, int] = {}  # child -> its PID on the host, once found
        self._pidfd: dict[int, int] = {}  # child -> a pidfd of that process (judge.sandbox.litter.host_pid)
        self._cgroups: dict = {}  # child -> its own cgroup (judge.sandbox.cgroups.Cgroup), where one was made
        self._inherited: dict[int, int] = {}  # child -> bytes it shares from its fork (see _contain)
        self._contained = [threading.Event() for _ in range(n)]  # _contain(i) is over, whatever it managed
        self._caps = (job.limits.memory_mb << 20, job.limits.processes)
        self._to_contain: queue.SimpleQueue = queue.SimpleQueue()  # children forked, for _contain (its own thread)
        self._open = set(range(n))  # children not closed yet
        self._events = [threading.Event() for _ in range(n)]
        self.failure = ""
        self.source = str(job.submission) if job.submission is not None else None  # the host file it serves
        self.on_close: list = []  # called once the sandbox is down (judge.pool removes the litter's directories)
        self._closing = False
        ours, theirs = [], []
        for _ in range(n):
            r_in, w_in = os.pipe()  # the child reads requests
            r_out, w_out = os.pipe()  # the child writes replies
            r_err, w_err = os.pipe()  # the child's prints
            ours.append((w_in, r_out, r_err))
            theirs.append((r_in, w_out, w_err))
        spec = ";".join(",".join(str(fd) for fd in s) for s in theirs)
        passed = [fd for s in theirs for fd in s]
        try:
            self.proc = backend.spawn(
                replace(job, module=MODULE), extra_fds=passed, share=n, args=(spec, "1" if job.interpret else "0")
            )
        except BaseException:
            for fd in passed + [fd for s in ours for fd in s]:
                os.close(fd)
            raise
        for fd in passed:
            os.close(fd)
        self.procs = [LitterProc(self, i, *ours[i]) for i in range(n)]
        self._stderr = bytearray()
        threading.Thread(target=self._read_reports, name="judge-litter", daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        threading.Thread(target=self._contain_each, name="judge-litter-cgroups", daemon=True).start()

    # ------------------------------------------------------------------ the parent's reports

    def _read_reports(self) -> None:
        buf = b""
        try:
            while True:
                chunk = os.read(self.proc.stdout, 1 << 12)
                if not chunk:
                    break
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if not self._report(line):
                        return
                if len(buf) > MAX_LINE:
                    self._fail("a report line past its bound")
                    return
        except OSError:
            pass
        finally:
            if not self._ended.is_set() and len(self._nspid) < self.n and not self._closing:
                self._fail("its parent ended before it forked every child")
            self._end()

    def _report(self, line: bytes) -> bool:
        """One line from the parent; False when it is not one it may send (the litter is then ended)."""
        try:
            msg = json.loads(line)
            if not isinstance(msg, dict) or len(msg) > 2:
                raise ValueError
            if msg.get("ready") is True:
                pass  # its imports are done: the forks follow
            elif "failed" in msg:
                self._fail(f"its parent failed: {str(msg['failed'])[:300]}")
                return False
            elif "forked" in msg:
                i, pid = _index(msg["forked"], self.n), msg.get("pid")
                if type(pid) is not int or pid <= 0 or i in self._nspid:
                    raise ValueError
                self._nspid[i] = pid
                self._to_contain.put(i)
                if len(self._nspid) == self.n:
                    self._forked.set()
            elif "exited" in msg:
                i, status = _index(msg["exited"], self.n), msg.get("status")
                if type(status) is not int or not -64 <= status <= 255:
                    raise ValueError
                # The first word on a child's end stands (a second comes where a child forged the first: the
                # parent's own, once it reaps that child, which the judge kills whatever it was told).
                self._status.setdefault(i, status)
                self._events[i].set()
            else:
                raise ValueError
            return True
        except (ValueError, TypeError, KeyError):
            self._fail("a report that does not parse")
            return False

    def _fail(self, why: str, say: bool = True) -> None:
        if not self.failure:
            self.failure = why
            if self.log and say:
                self.log(f"litter: {why} {self.last_words()}".strip())
        self._end()

    def _end(self) -> None:
        """No more reports: every child is killed, and the sandbox with them; one not reported ended ends so."""
        first = not self._ended.is_set()
        self._ended.set()
        self._to_contain.put(None)
        self._forked.set()
        if first:
            # Every child still running, by its pidfd (a report of its end came from inside the sandbox), then
            # the sandbox: under bwrap that alone kills them all; the process backend has no sandbox to kill.
            for i in range(self.n):
                if self.host_pid(i) is not None:
                    self._kill_by_pidfd(i)
            self.proc.kill()
        for i, event in enumerate(self._events):
            self._status.setdefault(i, -signal.SIGKILL)
            event.set()
            self._contained[i].set()

    def _drain_stderr(self) -> None:
        while True:
            try:
                chunk = os.read(self.proc.stderr, 1 << 16)
            except OSError:
                return
            if not chunk:
                return
            self._stderr = (self._stderr + chunk)[-4096:]

    def last_words(self) -> str:
        lines = [ln for ln in self._stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
        return lines[-1][:300] if lines else ""

    # ------------------------------------------------------------------ the children, from the host

    def host_pid(self, i: int) -> int | None:
        """Child ``i``'s PID on the host while it lives: the process among the sandbox's whose innermost PID
        (NSpid's last) is the one its parent reported, held by a pidfd from then on, so that a number the
        host gives to another process once the child is reaped is never taken for it. None before it is
        forked, once it is gone, or where it cannot be found."""
        fd = self._pidfd.get(i)
        if fd is not None:
            return self._hostpid[i] if _running(fd) else None
        nspid = self._nspid.get(i)
        if nspid is None:
            return None
        from judge.sandbox.base import _descendants

        # (A table read now: one read for another purpose a moment ago may predate the fork.)
        for pid in sorted(_descendants(self.proc.pid, max_age=0.0) - {self.proc.pid}):
            try:
                ids = _nspid(pid)
                if not (ids and int(ids[-1]) == nspid and self._is_child(pid)):
                    continue
                fd = os.pidfd_open(pid)
                if _nspid(pid) != ids:  # (the number was given to another process between the two reads)
                    os.close(fd)
                    continue
            except (OSError, ValueError):
                continue
            with self._lock:
                if i in self._pidfd:
                    os.close(fd)
                else:
                    self._pidfd[i], self._hostpid[i] = fd, pid
            return self.host_pid(i)
        return None

    def _contain_each(self) -> None:
        for _ in range(self.n):
            i = self._to_contain.get()
            if i is None:  # (the litter ended first)
                return
            self._contain(i)

    def _contain(self, i: int) -> None:
        """Move child ``i`` into a cgroup of its own (one worker's caps) inside the litter's, where the backend
        made the litter a cgroup; called as the parent reports the fork, before the child has its submission."""
        try:
            parent = getattr(self.proc, "cgroup", None)
            if parent is None:
                return
            deadline = time.monotonic() + FIND_SECONDS
            pid = self.host_pid(i)
            while pid is None and i not in self._pidfd and time.monotonic() < deadline:
                time.sleep(0.02)  # (forked after the process table was read)
                pid = self.host_pid(i)
            if pid is None:
                return
            # What it shares from its parent (torch, Triton: ~330 MiB) stays charged to the litter's cgroup, where
            # the parent made it; a lone worker holds that itself, against its own cap. So the child's cgroup is
            # capped that much lower, and its memory read that much higher: a red-team file that held 4000 MiB
            # in each worker was AC in a litter and MLE without one (cap 4096 MiB).
            inherited = _inherited(pid)
            memory, processes = self._caps
            group = parent.child(f"child-{i}", max(64 << 20, memory - inherited), processes)
            if group is None:
                return
            try:
                group.enter(pid)
            except OSError:
                return
            # Still running after the move, so the number was still the child's when it was written (the child
            # is the litter's own code until it is given its submission: it does not end by itself).
            if _running(self._pidfd[i]):
                self._inherited[i] = inherited
                self._cgroups[i] = group
        finally:
            self._contained[i].set()

    def _is_child(self, pid: int) -> bool:
        """Whether ``pid`` was forked by the litter's parent: its parent runs this module, in the same PID
        namespace (a process in a namespace a child made below it has a longer NSpid, and its own numbers)."""
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                parent = int(f.read().rsplit(b")", 1)[1].split()[1])
            with open(f"/proc/{parent}/cmdline", "rb") as f:
                if MODULE.encode() not in f.read():
                    return False
            return len(_nspid(pid)) == len(_nspid(parent)) > 0
        except (OSError, ValueError, IndexError):
            return False

    def kill_child(self, i: int) -> None:
        """Kill child ``i``, its session and its cgroup (by their PIDs, even when its end was reported: the report
        comes from inside the sandbox). One that cannot be found while it may be alive ends the whole litter."""
        try:
            self._kill_child(i)
        finally:
            if i in self._cgroups:
                self._cgroups[i].kill_all()  # (what it forked that left its session, also once the child is gone)

    def _kill_child(self, i: int) -> None:
        deadline = time.monotonic() + FIND_SECONDS
        while True:
            pid = self.host_pid(i)
            if pid is not None:
                try:
                    os.killpg(pid, signal.SIGKILL)  # (its session: the child leads it, so it is its PID)
                except (ProcessLookupError, PermissionError):
                    pass
                self._kill_by_pidfd(i)
                return
            if i in self._pidfd or self._events[i].is_set() or self._ended.is_set():
                return  # gone (a pidfd saw it end, or its parent reaped it), or the sandbox is going
            if i not in self._nspid and not self._forked.is_set():
                self._fail(f"child {i} was to be killed before it was forked", say=False)  # (a pool closing)
                return
            if time.monotonic() > deadline:
                self._fail(f"child {i} could not be found to be killed")
                return
            time.sleep(0.02)  # (forked since the process table was read, or reaped and its report on the way)

    def _kill_by_pidfd(self, i: int) -> None:
        try:
            signal.pidfd_send_signal(self._pidfd[i], signal.SIGKILL)
        except (OSError, KeyError):  # gone, or its pidfd closed with the litter
            pass

    def place(self, submission: Path) -> str:
        """Put the one file its children serve in the sandbox (a pooled litter, spawned before its job was known:
        judge.pool places it when a job takes the first child). Once; the same file again is a no-op."""
        with self._lock:
            placed = self.proc.submission_path
            if placed:
                if not same_file(submission, getattr(self.proc, "submission_dir", None), placed):
                    raise RuntimeError("a litter's workers serve the one submission placed in its sandbox")
            else:
                placed = self.proc.place(submission)
                self.source = str(submission)
            for p in self.procs:
                p.submission_path = placed
            return placed

    def release(self, i: int) -> None:
        """Child ``i`` is closed; the last one closed takes the sandbox down."""
        with self._lock:
            self._open.discard(i)
            last = not self._open
        if last:
            self.close()

    def close(self) -> None:
        self._closing = True  # (its end is then the judge's doing: nothing to report)
        self.proc.kill()
        self.proc.wait(5)
        close = getattr(self.proc, "close", None)
        if close is not None:
            close()
        with self._lock:
            fds, self._pidfd = list(self._pidfd.values()), {}
            then, self.on_close = self.on_close, []
        for fd in fds:
            os.close(fd)
        for call in then:
            call()


def _inherited(pid: int) -> int:
    """The anonymous and shared memory of ``pid``'s parent: what a child forked from it shares."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            parent = int(f.read().rsplit(b")", 1)[1].split()[1])
        with open(f"/proc/{parent}/status") as f:
            return sum(int(line.split()[1]) << 10 for line in f if line.startswith(("RssAnon:", "RssShmem:")))
    except (OSError, ValueError, IndexError):
        return 0


def _running(pidfd: int) -> bool:
    """Whether the process of ``pidfd`` has not ended (a pidfd reads as ready once it has)."""
    import select

    p = select.poll()
    p.register(pidfd, select.POLLIN)
    return not p.poll(0)


def _nspid(pid: int) -> list[str]:
    with open(f"/proc/{pid}/status") as f:
        return next((ln for ln in f if ln.startswith("NSpid:")), "").split()[1:]


def _index(value, n: int) -> int:
    if type(value) is not int or not 0 <= value < n:
        raise ValueError
    return value


class LitterProc(Proc):
    """One child of a litter, as the judge uses a worker."""

    def __init__(self, litter: Litter, i: int, stdin: int, stdout: int, stderr: int):
        self.litter = litter
        self.i = i
        self.stdin, self.stdout, self.stderr = stdin, stdout, stderr
        self.pid = litter.proc.pid
        self.submission_dir = getattr(litter.proc, "submission_dir", None)
        self.inside_dir = getattr(litter.proc, "inside_dir", "")
        self.submission_path = getattr(litter.proc, "submission_path", "")
        self._closed = False

    def place(self, submission: Path) -> str:
        """The litter's one file (placed before its parent started, or by judge.pool): checked, or placed now."""
        return self.litter.place(Path(submission))

    def kill(self) -> None:
        self.litter.kill_child(self.i)

    def before_setup(self) -> None:
        """Called before the child is given its submission (judge.channel): it waits until the child is in its
        own cgroup (or the judge has given up on one)."""
        self.litter._contained[self.i].wait(FIND_SECONDS + 1.0)

    def wait(self, timeout=None):
        """How it ended (its parent's report), or None while it runs, up to ``timeout``. One the host saw end (its
        pidfd) whose report does not come within REPORT_SECONDS ended so: killed (a parent stopped or gone,
        by a sibling, cannot reap it or say so)."""
        litter, i = self.litter, self.i
        deadline = None if timeout is None else time.monotonic() + timeout
        gone_at = None
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if litter._events[i].wait(0.2 if left is None else max(0.0, min(0.2, left))):
                return litter._status.get(i)
            if i in litter._pidfd and litter.host_pid(i) is None:
                gone_at = gone_at or time.monotonic()
                if time.monotonic() - gone_at > REPORT_SECONDS:
                    litter._status.setdefault(i, -signal.SIGKILL)
                    litter._events[i].set()
                    continue
            if deadline is not None and time.monotonic() >= deadline:
                return None

    def memory_bytes(self, exact_above=None):
        group = self.litter._cgroups.get(self.i)
        used = None if group is None else group.memory_bytes()
        if used is not None:
            return used + self.litter._inherited.get(self.i, 0)
        pid = self.litter.host_pid(self.i)
        return None if pid is None else process_tree_memory(pid, exact_above)

    def oom_killed(self) -> bool:
        group = self.litter._cgroups.get(self.i) or self.litter.proc
        return self.litter._status.get(self.i) == -signal.SIGKILL and group.oom_killed()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.kill()
        self.wait(5)
        for fd in (self.stdin, self.stdout, self.stderr):
            try:
                os.close(fd)
            except OSError:
                pass
        self.litter.release(self.i)


def same_file(submission: Path, folder: Path | None, placed: str) -> bool:
    """Whether ``submission`` (a host path) is the file placed as ``placed``: its name and its bytes (the copy in
    ``folder``, the host directory the sandbox shows, or ``placed`` itself where there is none)."""
    copy = Path(placed) if folder is None else folder / Path(placed).name
    try:
        return Path(placed).name == submission.name and copy.read_bytes() == submission.read_bytes()
    except OSError:
        return False


def spawn_litter(backend, job: Job, n: int, log=None) -> list[LitterProc] | None:
    """``n`` workers of ``job`` forked in one sandbox (its ``submission`` placed there, or, where it is None,
    placed later by :meth:`Litter.place`, before any child is given its "setup"); None where a litter
    cannot be had here, and the caller spawns them one by one. Returns at once: the parent imports and forks
    while the judge goes on; a litter that fails shows as workers that died before they were ready (the pool
    drops those it holds, and the job then spawns its own)."""
    if n < 2 or not getattr(backend, "litters", False):
        return None
    try:
        litter = Litter(backend, job, n, log)
    except Exception as exc:  # noqa: BLE001 - the workers are spawned one by one instead
        if log:
            log(f"litter: could not start ({type(exc).__name__}: {exc})")
        return None
    return litter.procs
