"""Checks of the times a worker reports: the physical floor and the clocks.

Both run in the judge on plain numbers. The worker shares a process with the
submission, so its numbers are evidence, not facts: a time below what the
hardware can do, or event times that do not fit the wall clock, mean the
timing was forged or the work was skipped.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Floor:
    seconds: float  # no correct kernel can run faster than this on this GPU
    bound: str  # "memory" or "compute"
    bytes: float
    flops: float


def floor_time(work: tuple[float, float], bandwidth: float, flops_rate: float) -> Floor:
    """The roofline floor: bytes over the copy bandwidth, flops over the matmul rate; the larger wins.

    ``work`` is (bytes that must move, flops that must be done) from the
    problem's golden.work(params); the rates are measured on this GPU.
    """
    nbytes, flops = float(work[0]), float(work[1])
    t_mem = nbytes / bandwidth if bandwidth > 0 else 0.0
    t_flop = flops / flops_rate if flops_rate > 0 else 0.0
    if t_flop > t_mem:
        return Floor(t_flop, "compute", nbytes, flops)
    return Floor(t_mem, "memory", nbytes, flops)


def below_floor(median_seconds: float, floor: Floor, margin: float) -> bool:
    """True when the median time beats the floor by more than the margin.

    margin 0.8 allows a kernel to run 25% past the measured ceilings (a copy
    does not reach the memory's peak; cuBLAS is not the last word) before the
    time is called impossible.
    """
    return median_seconds < floor.seconds * margin


def clock_problems(
    *,
    event_total: float,
    host_total: float,
    worker_wall: float,
    judge_wall: float,
    event_median: float | None,
    host_median: float | None,
) -> list[str]:
    """What does not add up between the worker's clocks and the judge's; empty when all is well.

    - nothing the worker timed can take longer than the request took, as the
      judge saw it from outside (``judge_wall``, from sending to the reply);
    - the worker's own wall clock around the request must cover most of the
      judge's: a clock made to run slow shows up here (the difference is the
      pipe and the judge's own work, a few ms; 20 ms and 20% are allowed);
    - each call's event time must be a fair part of the host time around the
      same call (the host time adds the L2 flush still running when the start
      event is queued, and launch and sync latency: under 0.3 ms in practice),
      so an ``elapsed_time`` that reports a fraction of the truth shows up.
      This one is a suspicion, not a finding: a host whose cores are all busy
      (a batch judging beside the speed run) wakes from the sync late, by
      several times the GPU's work (docs/measurements: clock calibration). The speed run asks
      for it alone (``host_gap``) and settles it after timing, against the
      reference's host clock and the profiler's (judge.timing.result).
    """
    problems = []
    slack = 1e-3 + 0.01 * judge_wall
    if event_total > judge_wall + slack:
        problems.append(
            f"the worker's event times add up to {event_total * 1e3:.3f} ms, more than the "
            f"{judge_wall * 1e3:.3f} ms the whole request took"
        )
    if host_total > judge_wall + slack:
        problems.append(
            f"the worker's host times add up to {host_total * 1e3:.3f} ms, more than the "
            f"{judge_wall * 1e3:.3f} ms the whole request took"
        )
    if worker_wall > judge_wall + slack:
        problems.append(
            f"the worker says the request took {worker_wall * 1e3:.3f} ms; the judge saw {judge_wall * 1e3:.3f} ms"
        )
    if worker_wall < 0.8 * judge_wall - 0.02:
        problems.append(
            f"the worker's clock saw {worker_wall * 1e3:.1f} ms of a request that took "
            f"{judge_wall * 1e3:.1f} ms (a slowed clock?)"
        )
    gap = host_gap(event_median, host_median)
    if gap:
        problems.append(gap)
    return problems


def host_gap(event_median: float | None, host_median: float | None) -> str | None:
    """The CUDA events' median call far below the host's (see clock_problems): the message, else None."""
    if event_median is not None and host_median is not None and event_median < 0.5 * host_median - 3e-4:
        return (
            f"the median call took {host_median * 1e6:.1f} us by the host clock but "
            f"{event_median * 1e6:.1f} us by the CUDA events (a forged timer?)"
        )
    return None


@dataclass(frozen=True)
class ClockAgreement:
    """The CUDA-event clock against the CUDA profiler's kernel records, for one shape and worker."""

    forged: bool  # the event time is far below the kernels' own span: RJ for a submission
    disagree: bool  # more than the tolerance apart: a note
    ratio: float | None  # event / profiler
    message: str | None


def compare_clocks(
    event_s: float | None,
    profiler_s: float | None,
    *,
    note_above: float = 0.10,
    note_abs: float = 0.5e-6,
    forged_below: float = 0.5,
    forged_abs: float = 3e-6,
) -> ClockAgreement:
    """Hold the event clock's time per call against the profiler's (both in seconds).

    The profiler's figure is the GPU's own timestamps of the kernels a call
    launched, first start to last end, read from CUPTI in another part of the
    driver than the events. They measure the same thing up to a microsecond or
    so (the events also cover the gap before the first kernel and after the
    last), so:

    - more than ``note_above`` (10%) and ``note_abs`` apart: a note;
    - an event time below ``forged_below`` (half) of the profiler's and more
      than ``forged_abs`` (3 us) short: the events did not see the work the
      GPU did - a forged timer (RJ for a submission).

    Nothing is concluded when either figure is missing.
    """
    if not event_s or not profiler_s or event_s <= 0 or profiler_s <= 0:
        return ClockAgreement(False, False, None, None)
    ratio = event_s / profiler_s
    diff = event_s - profiler_s
    text = (
        f"the CUDA events say {event_s * 1e6:.2f} us per call, the profiler's kernel records "
        f"{profiler_s * 1e6:.2f} us ({ratio:.2f}x)"
    )
    forged = ratio < forged_below and -diff > forged_abs
    disagree = abs(diff) > note_above * profiler_s and abs(diff) > note_abs
    return ClockAgreement(forged, disagree or forged, ratio, text if (forged or disagree) else None)
