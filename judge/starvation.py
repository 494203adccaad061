"""A worker's deadline that counts the worker's own time, not the time a loaded host kept it from a core.

A case's time limit is a wall-clock deadline on the worker's reply. On a host that other work loads (other
judges, a lab box of students, CI's tests side by side) part of that wall time is time the worker's threads were
ready to run and waited for a core: not the file's doing, so it must not turn into TLE ("a verdict is about the
file"). When the deadline passes, the worker is charged its wall time less the longest any of its threads waited
on a run queue, but never less than the processor time its threads used (threads of the file's own that crowd
its main thread buy it no time). While the charge is under the limit, the deadline moves on by the difference,
up to ``stretch`` times the limit in all. Past that, with the charge still under the limit, the host was too
loaded to judge the case: the caller says so (IE), plainly.

Both figures come from Linux's per-thread scheduler statistics (``/proc/PID/task/TID/schedstat``: nanoseconds on
a CPU, nanoseconds waiting on a run queue), read for the worker's host pids (judge.sandbox.base.Process.pids,
the sandbox's processes too, which sleep). Where they cannot be read, nothing is stretched: a plain deadline.
They are first read once a wait has lasted ``BASELINE_AFTER`` (listing a worker's processes and threads takes
milliseconds, as long as a case on a GPU): a reply that comes sooner costs nothing, and a wait is credited
with what the host took from it after that point.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

# How far past its limit a starved worker's deadline may move: a worker that got a quarter of a core still
# finishes a case that takes it the whole limit; one that got less is the host's problem, said as IE.
STRETCH = 4.0
BASELINE_AFTER = 0.2  # seconds into a wait before the worker's figures are first read


def _threads(pids) -> dict[int, tuple[int, int]]:
    """{thread id: (ns on a CPU, ns waiting for one)} for every thread of ``pids`` that can be read."""
    out = {}
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    run, wait = f.read().split()[:2]
                out[int(tid)] = (int(run), int(wait))
            except (OSError, ValueError):
                continue
    return out


class Deadline:
    """A wall-clock deadline that moves on by the time the host starved the worker. Called (by
    judge.shared.wire.Reader), it gives the deadline now, in ``time.monotonic()`` seconds."""

    def __init__(self, seconds: float, pids: Callable[[], set[int]], *, stretch: float = STRETCH):
        self.limit = seconds
        self.start = time.monotonic()
        self.at = self.start + seconds
        self.most = self.start + seconds * max(stretch, 1.0)
        self._pids = pids
        self._stretches = stretch > 1.0
        self._base: dict | None = None  # the worker's figures when first read (BASELINE_AFTER into the wait)
        self.waited = 0.0  # the longest wait for a core of any of the worker's threads since then, when last read

    def _safe_pids(self) -> set[int]:
        try:
            return self._pids()
        except Exception:  # noqa: BLE001 (a sandbox whose processes cannot be listed now: nothing to stretch)
            return set()

    def charged(self, now: float | None = None) -> float:
        """Seconds of the limit the worker has used: its wall time less the host's share of it (all of the wall
        time before the figures were first read)."""
        now = time.monotonic() if now is None else now
        wall = now - self.start
        if self._base is None:
            return wall
        used = waited = 0
        for tid, (run, wait) in _threads(self._safe_pids()).items():
            run0, wait0 = self._base.get(tid, (0, 0))  # (a thread born since: all of it)
            used += max(run - run0, 0)
            waited = max(waited, wait - wait0)
        self.waited = waited / 1e9
        return max(wall - self.waited, used / 1e9)

    def __call__(self) -> float:
        now = time.monotonic()
        if self._stretches and self._base is None and now - self.start >= BASELINE_AFTER:
            self._base = _threads(self._safe_pids())
        if now < self.at or self.at >= self.most:
            return self.at
        owed = self.limit - self.charged(now)
        if owed > 0:
            self.at = min(now + owed, self.most)
        return self.at

    def starved(self) -> bool:
        """At a deadline that passed: whether the host, not the worker, used up the time (the stretch ran out
        with the worker's own time still under its limit)."""
        return self._base is not None and self.charged() < self.limit
