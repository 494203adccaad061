"""Whose out-of-memory error it was: the worker's own use, or a GPU that others had filled.

A worker's GPU memory is capped (judge.options.GPU_MEMORY_MB; a timed worker
judge.gpu_budget.TIMED_EXTRA_BYTES more), and going over the cap is the submission's MLE. But several submissions
share a GPU in ``judge grade`` and ``judge serve``, and a CUDA allocation can also fail because the *device*
is full while the worker is well inside its cap: a dozen softmax submissions judged at once on one GPU turn
accepted files into MLE, RJ (a replay that could not allocate) and IE (docs/measurements: grading throughput).
That is the judge's failure, not the student's: IE, judged again by the next run, never a verdict against
the file.

PyTorch's message says what the process held when the allocation failed ("Tried to allocate 512.00 MiB ...
this process has 15.30 GiB memory in use. 32.00 GiB allowed"); this module reads it. The worker says it
(judge.untrusted.errors.classify) and the judge reads a replay's message the same way: both are the
submission's side of the boundary, and a forged one would turn any failure into an IE, which PrairieLearn
grades as "not graded, no attempt used" (a free look at the hidden tests). So the judge believes it only while
it sees the device full itself (judge.rules.gpu_full); otherwise the error stays MLE (RJ in a replay).
"""

from __future__ import annotations

import re

FULL_BELOW = 2 << 30  # free bytes under which a device counts as full (the judge's own view: judge.rules.gpu_full)

_UNITS = {"B": 1, "bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
_SIZE = r"([\d.]+) ?(bytes|B|KiB|MiB|GiB|TiB)"
_TRIED = re.compile(r"Tried to allocate " + _SIZE)
_TOTAL = re.compile(r"total capacity of " + _SIZE)
_HAS = re.compile(r"this process has " + _SIZE + r" memory in use")
_ALLOWED = re.compile(_SIZE + r" allowed")
# What a process adds to CUDA's own error where it could not ask the device at all (device_view): its CUDA
# context could not be made or queried, which is what a device with no room for a context does.
UNSEEN = "[out of memory on the device, as this process saw it: no figures, its CUDA context could not be asked]"


def _bytes(m) -> float | None:
    return float(m.group(1)) * _UNITS[m.group(2)] if m else None


def device_full(message: str) -> str | None:
    """Why an out-of-memory ``message`` was the device's, not the process's (one line), or None: the process
    held, with the allocation that failed, no more than it was allowed (no more than half the device, where no
    cap was set), and the device had no room for it."""
    if not message or "out of memory" not in message:
        return None
    if UNSEEN in message:
        return "the GPU was full with other work: this process could not get room for its CUDA context"
    tried, has = _bytes(_TRIED.search(message)), _bytes(_HAS.search(message))
    if tried is None or has is None:
        return None
    allowed, total = _bytes(_ALLOWED.search(message)), _bytes(_TOTAL.search(message))
    limit = allowed if allowed is not None else (total / 2 if total else None)
    if limit is None or has + tried > limit:
        return None
    gib = 1 << 30
    return (
        f"the GPU was full with other work: this process held {has / gib:.2f} GiB and asked for "
        f"{tried / gib:.2f} GiB more, within its {limit / gib:.2f} GiB"
    )


def out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is an out-of-memory error (PyTorch's OutOfMemoryError, or CUDA's own "out of memory" in
    another exception's text): what the judge's GPU work answers by doing it again on the CPU (judge.expected,
    judge.kit.heavy, judge.checker)."""
    return type(exc).__name__ == "OutOfMemoryError" or "out of memory" in str(exc).lower()


def _cuda_trouble(message: str) -> bool:
    """A CUDA error that a device filled by others causes: out of memory without PyTorch's figures (CUDA's own
    "CUDA error: out of memory", from a launch, a module load or a context), or a context refused ("busy or
    unavailable"). PyTorch's allocator's own error ("Tried to allocate ...") is not one: its figures decide
    (:func:`device_full`)."""
    low = (message or "").lower()
    if _TRIED.search(message or ""):
        return False
    return ("cuda" in low and "out of memory" in low) or "busy or unavailable" in low


def with_device_view(message: str, allowed_bytes: int | None = None) -> str:
    """``message``, and where it is a CUDA error of a full device that PyTorch's allocator did not describe
    (:func:`_cuda_trouble`), the figures :func:`device_full` reads, taken here (:func:`device_view`). With 16
    softmax jobs on one GPU such errors turn accepted files into MLE ("CUDA error: out of memory" while timed),
    RJ (a replay's) and RTE ("CUDA-capable device(s) is/are busy or unavailable"): docs/measurements, grading
    throughput. Said by the submission's side of the boundary: the judge believes it only while
    it sees the device full itself, as for PyTorch's own message."""
    if device_full(message) or not _cuda_trouble(message):
        return message
    return device_view(message, _figures(), allowed_bytes)


UNASKED = "unasked"  # what _figures gives where CUDA is set up here but the device could not be asked


def _figures() -> tuple[int, int, int] | str | None:
    """(free, total) bytes of this process's device and what its PyTorch allocator holds; UNASKED where CUDA is
    set up in this process but asking failed (no room for the context that the question needs); None where
    CUDA was never set up here (nothing to say about a device)."""
    try:
        import torch

        if not torch.cuda.is_initialized():
            return None
    except Exception:  # noqa: BLE001 - no torch: nothing to say
        return None
    try:
        free, total = torch.cuda.mem_get_info()
        return int(free), int(total), int(torch.cuda.memory_reserved())
    except Exception:  # noqa: BLE001 - CUDA is there, the device would not answer
        return UNASKED


def device_view(message: str, figures: tuple[int, int, int] | str | None, allowed_bytes: int | None) -> str:
    """``message`` with ``figures`` (free, total, held bytes) in the words of PyTorch's message, where the device
    was full (under FULL_BELOW free); unchanged where the device had room, so the error was this process's
    own doing (or where CUDA was never set up: None); with the UNSEEN mark where the device could not be asked
    (UNASKED). ``allowed_bytes``: the process's cap (else the device's size).

    "held" is what PyTorch's allocator holds, which its cap already bounds, so for CUDA's own errors the
    figures always read "within its cap": the device being full, as the judge sees it itself, is what decides.
    A file's own demand outside the allocator (a launch's local memory, pinned host memory) on a crowded GPU
    is then an IE, judged again, and its MLE comes where the device has room: a delay, where the rule's absence
    gave accepted files a lasting MLE, RJ or RTE."""
    if figures is None:
        return message  # CUDA never set up here: nothing seen
    if figures == UNASKED:
        # No CUDA context to ask (it could not be made, or asking failed): with 1 GiB of the device left to
        # the judge, a replay worker's "CUDA error: out of memory" comes without figures and would otherwise be
        # an RJ against the reference. The judge's own view
        # of the device (judge.rules.gpu_full) then decides alone.
        return f"{message[:3000]} {UNSEEN}"
    free, total, held = figures
    if free >= FULL_BELOW:
        return message
    allowed = allowed_bytes or total
    return (
        f"{message[:3000]} [out of memory on the device, as this process saw it: Tried to allocate 0 B; "
        f"total capacity of {total} B; this process has {held} B memory in use; {allowed} B allowed; "
        f"{free} B free]"
    )
