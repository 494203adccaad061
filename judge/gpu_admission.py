"""One admission per GPU, shared by every judge process on the host: device memory reserved before it is used.

Several judges share a GPU: students' ``submit``s on a lab machine, ``serve`` beside ``grade``, a CI beside both.
Each judge's workers are capped (judge.gpu_budget), but caps are promises only if their sum fits the device:
without a common ledger, eight lone ``submit``s each sized themselves for the whole GPU, and honest files came
back RJ, MLE and IE from CUDA out-of-memory errors. So before a judge starts its workers, replays or speed run
it *reserves* the memory the sandbox will let them take, and gives it back when they end; a judge that does
not fit waits its turn.

The ledger is a directory per GPU (next to the timing lock, judge.timing.lock) with one file per request,
``<ticket>-<pid>.json``. Its owner holds an flock on it for as long as the request lives, so a request dies
with its process however the process ends (SIGKILL included): a file whose flock anyone can take is a dead
judge's, counts as nothing, and is removed by whoever sees it. Every decision (a new ticket, an admission, a
resize, a release) is made under an exclusive flock on ``decide.lock``, so judges see each other's figures
whole. Tickets are CLOCK_MONOTONIC nanoseconds taken under that lock: first come, first admitted. Only the
first request in line may be admitted, so a big job is never starved by small ones passing it; a request to
*grow* an admitted reservation (a judge moving from its tests to its speed run) goes before new ones, since
finishing that judge is what frees memory.

What may be admitted: the device's memory, less a margin, less what others use outside the ledger (the
device's used memory beyond what admitted judges reserved: another program, a judge of an older version),
must hold every admitted reservation's bytes plus the largest *timed* extra among them. The timed extra is
what a speed run adds while it holds the GPU's lock exclusively (judge.timing.lock): only one judge at a time
does, so one region the size of the largest declared extra serves them all, and a speed run never waits for
memory while it holds the lock (nor could it: the others' cases wait for that lock).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

GIB = 1 << 30
MARGIN_BYTES = 2 * GIB  # never reserved: the driver's own, and what a device cannot hand out whole
POLL_SECONDS = 0.2  # a waiting judge looks again this often
DEVICE_READ_SECONDS = 0.5  # the device's used memory is read at most this often per process


class Refused(Exception):
    """A request the device can never hold (more than its memory less the margin): refused at once."""


@dataclass(frozen=True)
class Entry:
    """One live request in the ledger."""

    ticket: int
    pid: int
    held: bool  # admitted (else waiting)
    bytes: int  # reserved now (0 while waiting for a first admission)
    timed: int  # the extra it may use while it holds the GPU's lock exclusively
    timing: bool  # it holds that lock now (its extra is in use)
    grow: int  # bytes it waits to grow to (0: not waiting to grow)
    what: str
    name: str  # the file's name


def base_dir() -> Path:
    """Where the host's GPU locks live (the timing lock's place, judge.timing.lock.lock_path)."""
    from judge.settings import settings

    return settings().lock_dir


def device_memory(gpu: int) -> tuple[int, int] | None:
    """(total, used) bytes of host GPU ``gpu`` from nvidia-smi (no CUDA context needed), or None."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        probe = subprocess.run(
            [smi, "--query-gpu=memory.total,memory.used", "--format=csv,noheader,nounits", "-i", str(int(gpu))],
            capture_output=True,
            text=True,
            timeout=5.0,
        )
        total, used = (float(x) for x in probe.stdout.strip().splitlines()[0].split(","))
        return int(total) << 20, int(used) << 20
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def gib(n: int | float) -> str:
    return f"{n / GIB:.1f} GiB"


def waiting_words(ahead: int, why: str) -> str:
    """The progress line of a judge waiting for its admission."""
    if ahead:
        return f"waiting for the GPU: {ahead} judge{'s' if ahead > 1 else ''} ahead"
    return f"waiting for the GPU: {why}" if why else "waiting for the GPU"


class Admission:
    """The ledger of GPU ``gpu``. ``capacity``: the device's bytes, given (tests, or a GPU nvidia-smi cannot
    read); else read from the device. ``used``: a callable giving the device's used bytes now (None: read from
    the device; with a given capacity and no callable, nothing outside the ledger is counted)."""

    def __init__(
        self,
        gpu: int,
        *,
        capacity: int | None = None,
        used=None,
        margin: int = MARGIN_BYTES,
        directory: Path | None = None,
    ):
        self.gpu = int(gpu)
        self.margin = int(margin)
        self.dir = Path(directory) if directory is not None else base_dir() / f"triton-judge-gpu{self.gpu}.admission"
        self._capacity = capacity
        self._used = used if used is not None else ((lambda: 0) if capacity is not None else None)
        self._read_at, self._read = 0.0, None

    # ------------------------------------------------------------------ the device

    def _figures(self) -> tuple[int, int] | None:
        """(total, used) bytes now (cached for DEVICE_READ_SECONDS), or None when the device cannot be read."""
        if self._capacity is not None:
            return int(self._capacity), int(self._used())
        now = time.monotonic()
        if self._read is None or now - self._read_at > DEVICE_READ_SECONDS:
            self._read, self._read_at = device_memory(self.gpu), now
        if self._read is None:
            return None
        total, used = self._read
        return total, int(self._used()) if self._used is not None else used

    def limit(self) -> int | None:
        """The most one judge may ever reserve here (its bytes plus its timed extra), or None (not known)."""
        figures = self._figures()
        return None if figures is None else figures[0] - self.margin

    # ------------------------------------------------------------------ the ledger

    @contextlib.contextmanager
    def _deciding(self):
        self.dir.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            if self.dir.stat().st_uid == os.getuid():
                os.chmod(self.dir, 0o777)  # the GPU is the host's: its judges may run as several users
        fd = _shared_lock_file(self.dir / "decide.lock")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # (releases the flock)

    def entries(self, mine: set[str] = frozenset()) -> list[Entry]:
        """The live requests, in ticket order; dead ones (their flock free) are removed on the way. Call under
        _deciding. ``mine``: names this process holds (not probed: its own flock would refuse the probe anyway)."""
        out = []
        for path in sorted(self.dir.glob("*.json")):
            if path.name not in mine and not _held_by_someone(path):
                with contextlib.suppress(OSError):
                    path.unlink()
                continue
            try:
                data = json.loads(path.read_text())
                out.append(
                    Entry(
                        int(data["ticket"]),
                        int(data["pid"]),
                        bool(data["held"]),
                        int(data["bytes"]),
                        int(data["timed"]),
                        bool(data.get("timing")),
                        int(data.get("grow", 0)),
                        str(data.get("what", "")),
                        path.name,
                    )
                )
            except (OSError, ValueError, KeyError, TypeError):
                continue  # a file being written by a judge of another version: not ours to judge
        return out

    def snapshot(self) -> list[Entry]:
        """The live requests now (for progress lines, tests, and the capacity retries' waits)."""
        with self._deciding():
            return self.entries(_names_held_here())

    def free(self, entries: list[Entry], *, extra_timed: int = 0) -> int | None:
        """What may still be reserved beside ``entries`` (None: the device cannot be read): the device's memory
        less the margin, the reservations, the largest timed extra (``extra_timed`` counted with them) and
        what is used outside the ledger."""
        figures = self._figures()
        if figures is None:
            return None
        total, used = figures
        held = [e for e in entries if e.held]
        reserved = sum(e.bytes for e in held)
        in_use = reserved + sum(e.timed for e in held if e.timing)
        outside = max(0, used - in_use)
        region = max([e.timed for e in held] + [extra_timed])
        return total - self.margin - reserved - region - outside

    # ------------------------------------------------------------------ requests

    def reserve(
        self,
        want: int,
        *,
        least: int | None = None,
        unit: int = 1,
        timed: int = 0,
        what: str = "",
        on_wait=None,
        block: bool = True,
    ) -> Reservation | None:
        """Reserve ``want`` bytes, or as much as fits from ``least`` up in steps of ``unit`` (a worker's share), and
        ``timed`` bytes more for the speed run's timed part. Waits its turn (``on_wait(ahead, why)`` whenever
        what it waits for changes); ``block=False``: None unless admitted at once. Refused when ``least`` and
        ``timed`` can never fit. Without a readable device (no nvidia-smi, no capacity given) it admits at once:
        there is nothing to count against."""
        least = want if least is None else min(least, want)
        limit = self.limit()
        if limit is not None and least + timed > limit:
            raise Refused(
                f"this judging needs {gib(least + timed)} of GPU memory and GPU {self.gpu} can give at "
                f"most {gib(limit)} (its memory less a margin of {gib(self.margin)})"
            )
        with self._deciding():
            r = Reservation._new(self, what, timed)
        try:
            if r._await(want, least, unit, on_wait, block):
                return r
        except BaseException:
            r.release()
            raise
        r.release()
        return None

    def wait_for_change(self, timeout: float, poll: float = POLL_SECONDS) -> bool:
        """Wait until a reservation here ends or shrinks, or the device's used memory falls by a GiB (another
        program let go), at most ``timeout`` seconds: what a capacity retry waits for. Whether one did."""

        def reserved():
            return {e.name: e.bytes for e in self.snapshot() if e.held}

        def used():
            figures = self._figures()
            return None if figures is None else figures[1]

        before, high, end = reserved(), used(), time.monotonic() + timeout
        while time.monotonic() < end:
            time.sleep(poll)
            now, u = reserved(), used()
            if any(now.get(name, 0) < b for name, b in before.items()):
                return True
            if u is not None and high is not None and u <= high - GIB:
                return True
            before = {**before, **now}
            high = u if high is None or (u is not None and u > high) else high
        return False


_here: dict[str, Reservation] = {}  # file name -> this process's live reservations
_here_lock = threading.Lock()


def _names_held_here() -> set[str]:
    with _here_lock:
        return set(_here)


def _shared_lock_file(path: Path) -> int:
    """A descriptor of a lock file every user's judge may take: made readable and writable by all by whoever
    creates it (whatever its umask); another user's file is opened for reading only (flock needs no more)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    except PermissionError:
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    with contextlib.suppress(OSError):
        if os.fstat(fd).st_uid == os.getuid():
            os.fchmod(fd, 0o666)
    return fd


def _held_by_someone(path: Path) -> bool:
    """Whether another open file description holds ``path``'s flock (its owner is alive)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    except OSError:
        return True  # (cannot tell: count it)
    finally:
        os.close(fd)


class Reservation:
    """A request in the ledger, admitted or waiting; its file lives, flocked, as long as it does."""

    def __init__(self, admission: Admission, path: Path, fd: int, ticket: int, what: str, timed: int):
        self.admission = admission
        self.path, self.fd, self.ticket, self.what = path, fd, ticket, what
        self.bytes, self.timed, self.held, self.timing, self.grow = 0, int(timed), False, False, 0
        self.waited_seconds = 0.0  # summed over its waits (the first admission and any growth)

    @classmethod
    def _new(cls, admission: Admission, what: str, timed: int) -> Reservation:
        ticket = time.monotonic_ns()
        path = admission.dir / f"{ticket:020d}-{os.getpid()}.json"
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)  # held until release() or this process's end
        r = cls(admission, path, fd, ticket, what, timed)
        with _here_lock:
            _here[path.name] = r
        r._write()
        return r

    def _write(self) -> None:
        data = json.dumps(
            {
                "ticket": self.ticket,
                "pid": os.getpid(),
                "held": self.held,
                "bytes": self.bytes,
                "timed": self.timed,
                "timing": self.timing,
                "grow": self.grow,
                "what": self.what,
            }
        )
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, data.encode(), 0)

    def _await(self, want: int, least: int, unit: int, on_wait, block: bool) -> bool:
        """Wait for admission at ``least``..``want`` bytes (growing, when already admitted). Whether admitted."""
        adm, t0, said = self.admission, time.monotonic(), None
        growing, ahead = self.held, 0
        try:
            while True:
                if ahead == 0:
                    adm._figures()  # (read outside the decision's lock: nvidia-smi takes a while)
                with adm._deciding():
                    if growing and self.grow != want:
                        self.grow = want  # in line, before new requests (see _queue)
                        self._write()
                    entries = adm.entries(_names_held_here())
                    line = _queue(entries)
                    ahead = next((i for i, e in enumerate(line) if e.name == self.path.name), 0)
                    room = adm.free([e for e in entries if e.name != self.path.name], extra_timed=self.timed)
                    got = None
                    if ahead == 0:
                        got = want if room is None else _fit(room, least, want, unit)
                    if got is not None:
                        self.bytes, self.held, self.grow = got, True, 0
                        self._write()
                        return True
                    if not block:
                        return False
                why = (ahead, "" if ahead else f"{gib(least)} needed, {gib(max(0, room or 0))} free")
                if on_wait is not None and why != said:
                    on_wait(*why)
                said = why
                time.sleep(POLL_SECONDS)
        finally:
            self.waited_seconds += time.monotonic() - t0
            if growing and self.grow and self.fd >= 0:
                with adm._deciding():  # out of the line (given up, or refused at once)
                    self.grow = 0
                    self._write()

    def resize(
        self, want: int, *, least: int | None = None, timed: int | None = None, on_wait=None, block: bool = True
    ) -> bool:
        """Hold ``want`` bytes (and ``timed``, when given) from now on: less at once, more in its turn (before new
        requests). ``block=False``: more only if it fits now. Whether it holds ``want`` (at least ``least``)."""
        least = want if least is None else min(least, want)
        timed = self.timed if timed is None else int(timed)
        if want <= self.bytes and timed <= self.timed:
            with self.admission._deciding():
                self.bytes, self.timed = want, timed
                self._write()
            return True
        limit = self.admission.limit()
        if limit is not None and least + timed > limit:
            raise Refused(
                f"this judging needs {gib(least + timed)} of GPU memory and GPU "
                f"{self.admission.gpu} can give at most {gib(limit)}"
            )
        before = self.timed
        self.timed = timed
        if self._await(want, least, max(1, want - least), on_wait, block):
            return True
        with self.admission._deciding():
            self.timed = before
            self._write()
        return False

    def set_timing(self, on: bool) -> None:
        """This judge holds (or no longer holds) the GPU's lock exclusively: its timed extra is in use, so the
        device's used memory beyond the reservations is not another program's."""
        with self.admission._deciding():
            self.timing = bool(on)
            self._write()

    def release(self) -> None:
        if self.fd < 0:
            return
        with self.admission._deciding():
            with contextlib.suppress(OSError):
                self.path.unlink()
            with _here_lock:
                _here.pop(self.path.name, None)
            os.close(self.fd)  # (releases the flock)
            self.fd = -1
        self.held, self.bytes = False, 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


def _queue(entries: list[Entry]) -> list[Entry]:
    """Who is admitted next, in order: growths of admitted judges first, then new requests, each by ticket."""
    return [e for e in entries if e.held and e.grow] + [e for e in entries if not e.held]


def _fit(room: int, least: int, want: int, unit: int) -> int | None:
    """The most of ``least`` + k * ``unit`` (at most ``want``) that ``room`` holds, or None."""
    if room < least:
        return None
    steps = (min(room, want) - least) // max(1, unit)
    return min(want, least + steps * max(1, unit))
