"""Where one judge command's wall time goes, as a timeline (JUDGE_TIMELINE=PATH).

The report's ``timing`` sums seconds per kind of work; it cannot say what waited for what. With JUDGE_TIMELINE
set, the judge also records spans (the judge's torch import, each worker's start, each case on each lane with
its inputs, golden answer and reply, each replay, each group, the speed run's phases) on a clock that starts
with the process, and writes them when the command ends in Chrome's trace-event format: open the file in
https://ui.perfetto.dev (one row per thread of the judge) or summarise it with tests/bench/timeline_summary.py.
PATH is a file, or an existing directory (then ``timeline-<pid>.json`` in it, for commands that run submits
side by side). Off (the default), every call here is a check of one global and nothing else.

Only the judge's own clock and its own labels go in: nothing a worker sends is copied into a span's name.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from pathlib import Path

_events: list[dict] = []
_lock = threading.Lock()
_path: str | None = None
_origin = 0.0  # time.monotonic() at the process's start


def process_age() -> float | None:
    """Seconds since this process started (its start time in /proc, the python start included); None off
    Linux. The timeline's zero is the command's start."""
    try:
        with open("/proc/self/stat", "rb") as f:
            start_ticks = int(f.read().rsplit(b")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


def start(path: str | None = None) -> bool:
    """Record from now on when ``path`` (else the ``timeline`` setting, JUDGE_TIMELINE: judge.settings) is set;
    whether it is on."""
    global _path, _origin
    if not path:
        from judge.settings import settings

        path = settings().timeline
    if not path:
        return False
    with _lock:
        if _path is None:
            _origin = time.monotonic() - (process_age() or 0.0)
            _events.clear()
        _path = path
    return True


def on() -> bool:
    return _path is not None


def _us(t: float) -> int:
    return int(round((t - _origin) * 1e6))


def _thread() -> tuple[int, str]:
    t = threading.current_thread()
    return t.ident or 0, t.name


def add(name: str, t0: float, t1: float, *, cat: str = "judge", **args) -> None:
    """A span from monotonic time t0 to t1, in the calling thread's row."""
    if _path is None:
        return
    tid, tname = _thread()
    event = {
        "name": name,
        "cat": cat,
        "ph": "X",
        "ts": _us(t0),
        "dur": max(0, _us(t1) - _us(t0)),
        "pid": os.getpid(),
        "tid": tid,
        "args": {"thread": tname, **args},
    }
    with _lock:
        _events.append(event)


@contextlib.contextmanager
def span(name: str, *, cat: str = "judge", **args):
    """A span around the block; ``args`` may be filled in by the block (the dict it yields)."""
    if _path is None:
        yield args
        return
    t0 = time.monotonic()
    try:
        yield args
    finally:
        add(name, t0, time.monotonic(), cat=cat, **args)


def write() -> Path | None:
    """Write what was recorded (a JSON trace) and stop recording; the file written, or None."""
    global _path
    with _lock:
        path, _path = _path, None
        events = list(_events)
        _events.clear()
    if path is None:
        return None
    target = Path(path)
    if target.is_dir():
        target = target / f"timeline-{os.getpid()}.json"
    names = {}
    for e in events:
        names.setdefault(e["tid"], e["args"].get("thread", ""))
    meta = [
        {"name": "thread_name", "ph": "M", "pid": os.getpid(), "tid": tid, "args": {"name": n}}
        for tid, n in names.items()
    ]
    try:
        # The clock's zero on the host's monotonic clock: the timelines of commands run side by side (a
        # roster's jobs) line up on it (tests/bench/roster_timelines.py).
        target.write_text(
            json.dumps(
                {"traceEvents": meta + events, "displayTimeUnit": "ms", "otherData": {"monotonic_origin_s": _origin}}
            )
        )
    except OSError:
        return None
    return target
