"""What a judge reserves on its GPU (judge.gpu_admission): the memory its sandboxes let each process take.

A reservation is a promise only if the processes it covers cannot take more, so every figure here is a cap
the judge enforces, plus the CUDA context a process has besides:

* a test worker and a replay worker: [limits] gpu_memory_mb (judge.options.GPU_MEMORY_MB by default), PyTorch's
  per-process cap set in the worker (judge.untrusted.runner);
* the judge's own process (inputs, golden answers, checks): the same figure, capped the same way here
  (:func:`cap_own_process`); its work that does not fit goes to the CPU (judge.expected, judge.kit, judge.checker);
* the speed run's timed workers (the submission's, the reference's, PyTorch's): that cap plus TIMED_EXTRA_BYTES,
  which the plan keeps to by construction (judge.timing.plan: TIMED_SETS_BYTES and TIMED_KEEP_BYTES are
  its totals over the bench shapes, not per shape). That extra is in use only while the speed run holds the
  GPU's lock exclusively, so it is reserved as the ledger's shared *timed* region, not as bytes of its own.
"""

from __future__ import annotations

import threading

MIB, GIB = 1 << 20, 1 << 30
# A CUDA process's own device memory outside PyTorch's cap: its context, Triton's launcher, the driver's pools.
PROCESS_BYTES = 768 * MIB
# What a timed worker may hold for timing, over all bench shapes (judge.timing.plan.Planner.plan): its input sets,
# the outputs of its last request per shape (which the checks after the rounds draw from), and the flush buffer
# with what a plan's floor of three samples may add over the outputs' share.
TIMED_SETS_BYTES = 4 * GIB
TIMED_KEEP_BYTES = 4 * GIB
TIMED_EXTRA_BYTES = TIMED_SETS_BYTES + TIMED_KEEP_BYTES + 2 * GIB


def cap_bytes(limits) -> int:
    """A test or replay worker's cap (and the judge's own): [limits] gpu_memory_mb."""
    return int(limits.gpu_memory_mb) * MIB


def process_bytes(limits) -> int:
    """What one capped CUDA process of this judging may hold."""
    return cap_bytes(limits) + PROCESS_BYTES


def timed_cap_mb(limits) -> int:
    """The PyTorch cap of a timed worker, in MiB."""
    return int(limits.gpu_memory_mb) + TIMED_EXTRA_BYTES // MIB


def speed_bytes(limits, *, replays: int, baseline: bool) -> tuple[int, int]:
    """(bytes, timed extra) of a speed run's workers: the submission's and the reference's timed workers (and
    PyTorch's with ``baseline``) and its ``replays`` replay workers."""
    timed_workers = 3 if baseline else 2
    return (timed_workers + replays) * process_bytes(limits), timed_workers * TIMED_EXTRA_BYTES


_own_lock = threading.Lock()
_own: dict[int, int] = {}  # torch device index -> bytes this process's judging may take there


def cap_own_process(index: int, delta: int) -> None:
    """Add ``delta`` bytes to what this process may allocate on its CUDA device ``index`` (several sessions in one
    process add up), and set PyTorch's cap to it. Needs CUDA set up; what fails here leaves the cap as it was."""
    with _own_lock:
        _own[index] = max(0, _own.get(index, 0) + delta)
        want = _own[index]
    try:
        import torch

        total = torch.cuda.get_device_properties(index).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, want / total) if want else 1.0, index)
    except Exception:  # noqa: BLE001 - no CUDA here: nothing to cap
        pass
