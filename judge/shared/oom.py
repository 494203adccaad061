"""Whose out-of-memory error it was: the worker's own use, or a GPU that others had filled.

A worker's GPU memory is capped (judge.options.GPU_MEMORY_MB; a timed worker 24 GB more,
judge.timing.speedrun.TIMED_EXTRA_MB), and going over the cap is the submission's MLE. But several submissions
share a GPU in ``judge grade`` and ``judge serve``, and a CUDA allocation can also fail because the *device*
is full while the worker is well inside its cap: on the H200, 12 softmax submissions at once turned five
accepted files into MLE, RJ (a replay that could not allocate) and IE (tests/gpu/RESULTS.md, 2026-12-05 call
2). That is the judge's failure, not the student's: IE, judged again by the next run, never a verdict against
the file.

PyTorch's message says what the process held when the allocation failed ("Tried to allocate 512.00 MiB ...
this process has 15.30 GiB memory in use. 32.00 GiB allowed"); this module reads it. The worker says it
(judge.untrusted.runner.classify) and the judge reads a replay's message the same way: both are the
submission's side of the boundary, and a forged one would turn any failure into an IE, which PrairieLearn
grades as "not graded, no attempt used" (a free look at the hidden tests). So the judge believes it only while
it sees the device full itself (judge.rules.gpu_full); otherwise the error stays MLE (RJ in a replay).
"""

from __future__ import annotations

import re

_UNITS = {"B": 1, "bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
_SIZE = r"([\d.]+) ?(bytes|B|KiB|MiB|GiB|TiB)"
_TRIED = re.compile(r"Tried to allocate " + _SIZE)
_TOTAL = re.compile(r"total capacity of " + _SIZE)
_HAS = re.compile(r"this process has " + _SIZE + r" memory in use")
_ALLOWED = re.compile(_SIZE + r" allowed")


def _bytes(m) -> float | None:
    return float(m.group(1)) * _UNITS[m.group(2)] if m else None


def device_full(message: str) -> str | None:
    """Why an out-of-memory ``message`` was the device's, not the process's (one line), or None: the process
    held, with the allocation that failed, no more than it was allowed (no more than half the device, where no
    cap was set), and the device had no room for it."""
    if not message or "out of memory" not in message:
        return None
    tried, has = _bytes(_TRIED.search(message)), _bytes(_HAS.search(message))
    if tried is None or has is None:
        return None
    allowed, total = _bytes(_ALLOWED.search(message)), _bytes(_TOTAL.search(message))
    limit = allowed if allowed is not None else (total / 2 if total else None)
    if limit is None or has + tried > limit:
        return None
    gib = 1 << 30
    return (f"the GPU was full with other work: this process held {has / gib:.2f} GiB and asked for "
            f"{tried / gib:.2f} GiB more, within its {limit / gib:.2f} GiB")
