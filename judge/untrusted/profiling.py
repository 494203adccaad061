"""The second clock: the CUDA profiler's own records of the kernels a call ran.

The worker runs a few timed samples under the PyTorch profiler (Kineto, which
reads CUPTI's activity records: when each kernel, memcpy and memset started
and ended on the GPU, stamped by the GPU itself). Each call runs inside a
named range (``judge.call.<index>``, a ``_RecordFunctionFast``: unlike
``record_function`` it dispatches no operator, so the operator watch does not
see it). A GPU record belongs to the call whose range it was launched from:

* **linked**: Kineto links each GPU record to the innermost PyTorch operator
  or range that was open when it was launched (``linked_correlation_id``);
  an operator belongs to the range that contains it (both are stamped by
  PyTorch's own clock);
* **runtime**: each GPU record has the correlation id of the runtime or driver
  call that launched it (``cudaLaunchKernel``, or ``cuLaunchKernelEx`` for
  Triton), and that call was made inside one range (CUPTI's host clock).

The two are combined, the linked one first. A runtime attribution that
disagrees with a linked one, or that puts the judge's own spin kernel (the
hold before every sample) inside a call, means the two host clocks are not
aligned: then only the linked attributions count, and the result says so.
The judge's own fills, flush and hold run outside every range and are never
attributed.

Everything here degrades to a reason string, never an exception: no Kineto,
no CUPTI, an API that differs in this torch.
"""

from __future__ import annotations

import bisect
import re
from collections import namedtuple

PREFIX = "judge.call."
GPU_WORK = {"kernel", "gpu_memcpy", "gpu_memset", "concurrent_kernel"}
RUNTIME_KINDS = {"cuda_runtime", "cuda_driver"}
OP_KINDS = {"cpu_op", "user_annotation"}  # PyTorch's own records: their ids are what GPU records link to
_RUNTIME_NAME = re.compile(r"^cu(da)?[A-Z]\w*$")  # cudaLaunchKernel, cuLaunchKernelEx, cudaMemcpyAsync ...
SPIN = "spin_kernel"  # torch.cuda._sleep's kernel: the judge's hold, and the marker after a profiled sample
MARKER_NS = 10_000  # a spin shorter than this is a marker (one cycle), longer ones are holds (>= 30 us)

Record = namedtuple("Record", "name gpu start end corr linked kind")


def range_factory(torch):
    """A context-manager factory for the per-call ranges, or None when this torch has none."""
    prof = getattr(getattr(torch, "_C", None), "_profiler", None)
    return getattr(prof, "_RecordFunctionFast", None)


def start(torch, cuda: bool):
    """(profiler, None) with the profiler running, or (None, why not)."""
    try:
        import torch.autograd.profiler as autograd_profiler
        from torch.autograd import ProfilerActivity

        if range_factory(torch) is None:
            return None, "this torch has no torch._C._profiler._RecordFunctionFast"
        if cuda:
            supported = torch.autograd._supported_activities()
            if ProfilerActivity.CUDA not in supported:
                return None, "Kineto has no CUDA activity here (no CUPTI)"
        # torch.autograd.profiler.profile, not torch.profiler.profile: the
        # latter imports torch._inductor (and with it torch._dynamo, which
        # rewraps torch.manual_seed) the first time it starts.
        prof = autograd_profiler.profile(use_device="cuda" if cuda else None, use_kineto=True, use_cpu=True)
        prof.__enter__()
        return prof, None
    except Exception as exc:  # noqa: BLE001 - no profiler is a note, never a failure
        return None, f"the profiler did not start: {type(exc).__name__}: {str(exc)[:200]}"


def stop(prof):
    """(records, None) or (None, why not); always leaves the profiler off."""
    try:
        prof.__exit__(None, None, None)
    except Exception as exc:  # noqa: BLE001
        return None, f"the profiler did not stop cleanly: {type(exc).__name__}: {str(exc)[:200]}"
    try:
        results = getattr(prof, "kineto_results", None)
        if results is None:
            return None, "the profiler returned no Kineto results"
        return records(results.events()), None
    except Exception as exc:  # noqa: BLE001
        return None, f"the profiler's records could not be read: {type(exc).__name__}: {str(exc)[:200]}"


def _get(event, ns: str, us: str) -> int:
    f = getattr(event, ns, None)
    if f is not None:
        return int(f())
    return int(round(float(getattr(event, us)()) * 1000))


def records(events) -> list[Record]:
    """Plain records from Kineto's events (_KinetoEvent); an event that cannot be read is skipped."""
    out = []
    for e in events:
        try:
            name = str(e.name())
            gpu = str(e.device_type()).split(".")[-1].upper() == "CUDA"
            begin = _get(e, "start_ns", "start_us")
            end = begin + _get(e, "duration_ns", "duration_us")
            kind = str(e.activity_type()) if hasattr(e, "activity_type") else ""
            out.append(Record(name, gpu, begin, end, int(e.correlation_id()), int(e.linked_correlation_id()), kind))
        except Exception:  # noqa: BLE001 - one odd record does not spoil the rest
            continue
    return out


def _is_runtime(r: Record) -> bool:
    if r.kind:
        return r.kind in RUNTIME_KINDS
    return bool(_RUNTIME_NAME.match(r.name))


def _is_work(r: Record) -> bool:
    if r.name.startswith(PREFIX):
        return False  # a GPU-side copy of a range (gpu_user_annotation), not work
    if r.kind:
        return r.kind in GPU_WORK
    return True


def attribute(recs: list[Record]) -> dict:
    """Which GPU records each call launched.

    Returns {"calls": {index: [(start_ns, end_ns), ...]}, "method": str, "note": str | None}.
    """
    ranges = []  # (start, end, index, corr)
    for r in recs:
        if not r.gpu and r.name.startswith(PREFIX) and r.name[len(PREFIX) :].isdigit():
            ranges.append((r.start, r.end, int(r.name[len(PREFIX) :]), r.corr))
    ranges.sort()
    starts = [x[0] for x in ranges]

    def owner(t):
        i = bisect.bisect_right(starts, t) - 1
        if i >= 0 and ranges[i][0] <= t <= ranges[i][1]:
            return ranges[i][2]
        return None

    by_op = {corr: index for _, _, index, corr in ranges if corr}
    by_runtime = {}
    for r in recs:
        if r.gpu or r.name.startswith(PREFIX):
            continue
        c = owner(r.start)
        if c is None:
            continue
        if _is_runtime(r):
            if r.corr:
                by_runtime[r.corr] = c
        elif r.corr and (r.kind in OP_KINDS if r.kind else True):
            by_op.setdefault(r.corr, c)
    gpu = [r for r in recs if r.gpu and _is_work(r)]
    linked, runtime, conflicts, spins = {}, {}, 0, 0
    for i, r in enumerate(gpu):
        a = by_op.get(r.linked) if r.linked else None
        b = by_runtime.get(r.corr) if r.corr else None
        if a is not None:
            linked[i] = a
        if b is not None:
            runtime[i] = b
            if a is not None and a != b:
                conflicts += 1
            if SPIN in r.name:
                spins += 1
    note = None
    use_runtime = True
    if conflicts or spins:
        use_runtime = False
        note = (
            f"runtime-call attribution dropped ({conflicts} disagreements with the linked one, "
            f"{spins} judge spin kernels inside a call): host clocks not aligned"
        )
    calls = {index: [] for _, _, index, _ in ranges}
    methods = set()
    for i, r in enumerate(gpu):
        c = linked.get(i)
        if c is not None:
            methods.add("linked")
        elif use_runtime and i in runtime:
            c = runtime[i]
            methods.add("runtime")
        if c is not None:
            calls[c].append((r.start, r.end))
    return {"calls": calls, "method": "+".join(sorted(methods)) or "none", "note": note}


def gpu_order(recs: list[Record], attempts: list[int]) -> list[list] | None:
    """Per sample, the GPU records between its hold and its marker, by the GPU's clock alone.

    The fallback when no record could be attributed by correlation (say this
    CUPTI records no driver calls, through which Triton launches): in a
    profiled sample the worker launches a one-cycle spin kernel (the marker)
    right after the calls, so on the calls' stream the GPU runs: hold (a long
    spin), the calls' kernels, marker. ``attempts`` is how many tries each
    sample took (each try has a marker; the last one is the sample). Work the
    calls started on another stream after the marker is missed. None when the
    spins do not add up.
    """
    spins = sorted((r for r in recs if r.gpu and SPIN in r.name), key=lambda r: r.start)
    markers = [r for r in spins if r.end - r.start < MARKER_NS]
    holds = [r for r in spins if r.end - r.start >= MARKER_NS]
    if not attempts or len(markers) != sum(attempts):
        return None
    work = sorted((r for r in recs if r.gpu and _is_work(r) and SPIN not in r.name), key=lambda r: r.start)
    out, done = [], 0
    for n in attempts:
        done += n
        m = markers[done - 1]
        before = [h for h in holds if h.end <= m.start]
        if not before:
            return None
        h = before[-1]
        out.append([(r.start, r.end) for r in work if h.end <= r.start <= m.start])
    return out


def span(intervals) -> tuple[float, float, int]:
    """(first start to last end, sum of durations, count) in seconds, of (start_ns, end_ns) intervals."""
    if not intervals:
        return 0.0, 0.0, 0
    first = min(s for s, _ in intervals)
    last = max(e for _, e in intervals)
    busy = sum(e - s for s, e in intervals)
    return (last - first) * 1e-9, busy * 1e-9, len(intervals)


def summarize(recs: list[Record], samples: list[list[int]], attempts: list[int] | None = None) -> dict:
    """Per sample (the call indices it holds): the GPU span of its calls and of each call."""
    got = attribute(recs)
    calls = got["calls"]
    out = []
    for idx in samples:
        allv = [iv for c in idx for iv in calls.get(c, [])]
        total, busy, n = span(allv)
        out.append(
            {
                "span_s": total,
                "busy_s": busy,
                "kernels": n,
                "calls": [span(calls.get(c, []))[0] for c in idx],
                "ranges": sum(1 for c in idx if c in calls),
            }
        )
    found = sum(s["kernels"] for s in out)
    if not found and attempts and len(attempts) == len(samples):
        ordered = gpu_order(recs, attempts)
        if ordered is not None and any(ordered):
            got["method"] = "gpu-order"
            out = []
            for idx, allv in zip(samples, ordered):
                total, busy, n = span(allv)
                out.append({"span_s": total, "busy_s": busy, "kernels": n, "calls": [], "ranges": len(idx)})
            found = sum(s["kernels"] for s in out)
    status = "ok" if found else "no kernels"
    note = got["note"]
    if not all(s["kernels"] for s in out):
        missing = sum(1 for s in out if not s["kernels"])
        gpu = sum(1 for r in recs if r.gpu)
        note = "; ".join(
            x
            for x in (
                note,
                f"{missing} of {len(out)} samples had no GPU record attributed "
                f"({gpu} GPU records, {len(calls)} call ranges)",
            )
            if x
        )
    return {"status": status, "method": got["method"], "note": note, "samples": out, "records": len(recs)}
