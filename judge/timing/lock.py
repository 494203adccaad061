"""The GPU to itself for timing: a reader-writer lock per GPU index, on files.

A speed run holds GPU ``i`` exclusively (``gpu_lock``). Two judges timing on
one GPU would slow each other down by a varying amount, and so would another
submission's correctness cases running beside the timed calls (``judge grade``
and ``judge serve`` run several submissions per GPU): so correctness work
takes the same lock shared (``gpu_shared``), one case at a time. Any number of
cases run side by side; none runs while a speed run times, and a speed run
starts once the cases in flight are done.

Two fcntl locks make it fair to the speed run: it first takes the *intent*
file exclusively, then the GPU file. A case takes the intent file shared only
for as long as it takes the GPU file shared, so once a speed run is waiting no
new case starts, and it waits for the ones in flight alone (each is bounded by
its case limit), not for a stream of new ones.

A third file queues speed runs behind one another: a speed run takes it shared while it waits for the
GPU, and a case starts only when it can take it exclusively for an instant (no speed run waits). So when
one speed run ends and another is waiting, the second one starts at once, instead of after a batch of
cases that slipped in between the two and had to drain first: seconds a speed run with a dozen judges on
one GPU. The queue and the replays' compile pass (judge.replay.Replayer.precompile) cut a roster's lock waits
by a quarter (docs/measurements: the speed run's schedule).

The kernel releases the locks when the process exits, however it exits, so a
crashed judge never leaves a GPU locked. Within the process that holds a GPU
exclusively, ``gpu_shared`` does not wait (its work is the speed run's own).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from pathlib import Path

from judge import timeline

_held: dict[int, int] = {}  # GPU index -> how many gpu_lock blocks of this process hold it exclusively
_held_lock = threading.Lock()


def lock_path(gpu: int) -> Path:
    from judge.settings import settings

    return settings().lock_dir / f"triton-judge-gpu{int(gpu)}.lock"


def intent_path(gpu: int) -> Path:
    return lock_path(gpu).with_suffix(".intent")


def queue_path(gpu: int) -> Path:
    return lock_path(gpu).with_suffix(".queue")


class Cancelled(Exception):
    """A wait for the GPU given up: its ``cancel`` event was set (the work that waited is not wanted any more)."""


def _take(
    fd: int, how: int, *, timeout: float | None, poll: float, waiting, cancel=None, tries: int | None = None
) -> None:
    """flock ``fd`` (``how``), polling; ``waiting()`` once if it must wait; TimeoutError past ``timeout``;
    Cancelled once ``cancel`` (a threading.Event) is set; BlockingIOError after ``tries`` tries."""
    start = time.monotonic()
    told = False
    while True:
        try:
            fcntl.flock(fd, how | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if tries is not None:
                tries -= 1
                if tries <= 0:
                    raise
            if not told and waiting is not None:
                waiting()
                told = True
            if timeout is not None and time.monotonic() - start > timeout:
                raise TimeoutError from None
            if cancel is not None and cancel.is_set():
                raise Cancelled from None
            time.sleep(poll)


def _open(path: Path, write: bool) -> int:
    """A lock file's descriptor. Made readable and writable by everyone when this process creates it (the
    GPU is the host's, its judges may run as several users); a reader needs only to read it (flock does not
    need write access), so another user's file with a stricter mode still admits correctness cases."""
    fd = os.open(path, (os.O_RDWR if write else os.O_RDONLY) | os.O_CREAT | os.O_CLOEXEC, 0o666)
    try:
        if os.fstat(fd).st_uid == os.getuid():
            os.fchmod(fd, 0o666)
    except OSError:
        pass
    return fd


@contextlib.contextmanager
def gpu_lock(gpu: int, *, timeout: float | None = None, on_wait=None, poll: float = 0.2):
    """Hold GPU ``gpu`` exclusively for the block; ``on_wait(message)`` is called once if it must wait.

    Raises TimeoutError after ``timeout`` seconds of waiting (None: wait for ever).
    """
    path = lock_path(gpu)
    fds: list[int] = []
    told = []

    def waiting(what: str):
        def say():
            if on_wait is not None and not told:
                told.append(True)
                on_wait(f"waiting for {what} on GPU {gpu}{_read_holder(fds[1])} (lock {path})")

        return say

    try:
        fds.append(_open(intent_path(gpu), write=True))
        fds.append(_open(path, write=True))
        intent, fd = fds
        # In the queue while it waits: no new case starts from here (see gpu_shared).
        queue = _open(queue_path(gpu), write=False)
        fcntl.flock(queue, fcntl.LOCK_SH)  # never waits: only a case's instant probe takes it exclusively
        start = time.monotonic()
        try:
            _take(intent, fcntl.LOCK_EX, timeout=timeout, poll=poll, waiting=waiting("another judge timing"))
            left = None if timeout is None else max(0.0, timeout - (time.monotonic() - start))
            # New correctness cases wait from here; the ones in flight finish (each within its case limit).
            _take(fd, fcntl.LOCK_EX, timeout=left, poll=poll, waiting=waiting("the cases in flight"))
        except TimeoutError:
            raise TimeoutError(f"GPU {gpu} stayed locked for {timeout:g} s (lock {path})") from None
        finally:
            os.close(queue)  # out of the queue: it holds the GPU (or gave up)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        with _held_lock:
            _held[int(gpu)] = _held.get(int(gpu), 0) + 1
        try:
            yield path
        finally:
            with _held_lock:
                _held[int(gpu)] -= 1
    finally:
        for fd in reversed(fds):
            os.close(fd)  # closing the descriptors releases the locks


@contextlib.contextmanager
def gpu_shared(gpu: int, *, on_wait=None, poll: float = 0.05, cancel=None):
    """Correctness work on GPU ``gpu`` for the block: beside any other, never while a speed run holds it or
    waits for it. ``on_wait(message)`` once if it must wait. No wait in a process that holds it exclusively.
    ``cancel``: a threading.Event whose setting ends the wait with Cancelled (a discarded speed run's warm-up)."""
    with _held_lock:
        mine = _held.get(int(gpu), 0) > 0
    if mine:
        yield
        return
    path = lock_path(gpu)

    told = []

    def say():
        if on_wait is not None and not told:
            told.append(True)
            on_wait(f"waiting for a speed run on GPU {gpu} to end (lock {path})")

    fd = _open(path, write=False)
    try:
        queue = _open(queue_path(gpu), write=False)
        try:
            # Only while no speed run waits in the queue: an instant's exclusive hold of it says so. (Another
            # case's probe at the same instant refuses it too: told only when three quick tries fail.)
            try:
                _take(queue, fcntl.LOCK_EX, timeout=None, poll=0.001, waiting=None, cancel=cancel, tries=3)
            except BlockingIOError:
                _take(queue, fcntl.LOCK_EX, timeout=None, poll=poll, waiting=say, cancel=cancel)
        finally:
            os.close(queue)
        intent = _open(intent_path(gpu), write=False)
        try:
            _take(intent, fcntl.LOCK_SH, timeout=None, poll=poll, waiting=say, cancel=cancel)
            _take(fd, fcntl.LOCK_SH, timeout=None, poll=poll, waiting=None, cancel=cancel)
        finally:
            os.close(intent)  # held only to get in: a speed run that now asks for the intent gets it
        t_got = time.monotonic()
        try:
            yield
        finally:
            # With JUDGE_TIMELINE: what a speed run's wait for the cases in flight waited for.
            timeline.add("GPU held shared", t_got, time.monotonic(), cat="lock")
    finally:
        os.close(fd)


def _read_holder(fd: int) -> str:
    try:
        pid = os.pread(fd, 32, 0).decode().strip()
    except OSError:
        return ""
    return f" (pid {pid})" if pid.isdigit() else ""
