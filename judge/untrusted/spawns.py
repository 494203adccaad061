"""Threads and processes the submission's own code starts: the primitives every start goes through are
wrapped, and a start from the file's code is counted, for the judge to rule on (judge.untrusted.guard
installs it; the worker reports it after the import and after each call)."""

from __future__ import annotations

import os
import threading

from judge.untrusted.watch_state import _from_submission, _state


def take_events() -> dict:
    """What the submission started (threads, processes) since the last call; then forgets it."""
    out = dict(_state.events)
    _state.events.clear()
    return out


def _flag_if_submission(kind: str) -> None:
    if _from_submission(3):
        _state.events[kind] += 1


def _watch_starts() -> None:
    """Wrap the primitives every thread and process start goes through."""
    import _thread

    def wrap(owner, attr, kind):
        original = getattr(owner, attr, None)
        if original is None or getattr(original, "_judge_wrapped", False):
            return

        def started(*args, **kwargs):
            _flag_if_submission(kind)
            return original(*args, **kwargs)

        started._judge_wrapped = True
        setattr(owner, attr, started)

    for attr in ("start_new_thread", "start_joinable_thread", "start_new"):
        wrap(_thread, attr, "thread")
    for attr in ("_start_new_thread", "_start_joinable_thread"):
        wrap(threading, attr, "thread")
    try:
        import _posixsubprocess
        import subprocess

        wrap(_posixsubprocess, "fork_exec", "process")
        wrap(subprocess, "_fork_exec", "process")
    except ImportError:  # pragma: no cover - not on Linux
        pass
    for attr in ("posix_spawn", "posix_spawnp", "system", "spawnv", "spawnve", "spawnvp", "spawnvpe"):
        wrap(os, attr, "process")
    if hasattr(os, "register_at_fork"):
        # os.fork, os.forkpty and multiprocessing's fork all run this in the parent.
        os.register_at_fork(before=lambda: _flag_if_submission("process"))
