"""One judge at a time per GPU: an exclusive fcntl lock on a file per GPU index.

Two judges timing on one GPU would slow each other down by a varying amount;
the second one waits (and says so) instead. The lock is released by the
kernel when the process exits, however it exits, so a crashed judge never
leaves a GPU locked.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path


def lock_path(gpu: int) -> Path:
    base = os.environ.get("JUDGE_LOCK_DIR") or os.environ.get("XDG_RUNTIME_DIR") or "/tmp"
    return Path(base) / f"triton-judge-gpu{int(gpu)}.lock"


@contextlib.contextmanager
def gpu_lock(gpu: int, *, timeout: float | None = None, on_wait=None, poll: float = 0.2):
    """Hold GPU ``gpu`` exclusively for the block; ``on_wait(message)`` is called once if it must wait.

    Raises TimeoutError after ``timeout`` seconds of waiting (None: wait for ever).
    """
    path = lock_path(gpu)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        start = time.monotonic()
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not told and on_wait is not None:
                    holder = _read_holder(fd)
                    on_wait(f"waiting for another judge timing on GPU {gpu}{holder} (lock {path})")
                    told = True
                if timeout is not None and time.monotonic() - start > timeout:
                    raise TimeoutError(f"GPU {gpu} stayed locked for {timeout:g} s (lock {path})") from None
                time.sleep(poll)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield path
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _read_holder(fd: int) -> str:
    try:
        pid = os.pread(fd, 32, 0).decode().strip()
    except OSError:
        return ""
    return f" (pid {pid})" if pid.isdigit() else ""
