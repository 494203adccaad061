"""Timing samples (judge.untrusted.bench's docstring describes one): the hold that makes a sample's event
time the GPU's work alone, the L2 flush, the K calls of a sample (captured in a CUDA graph where they can be),
and the overhead of the timed sequence with no call in it.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field

from judge.untrusted import streams

HOLD_MARGIN = 1.5  # the hold is this many times the host time it must cover ...
HOLD_PAD = 50e-6  # ... plus this
MIN_HOLD = 30e-6
MAX_HOLD = 0.1  # seconds: a call that needs longer to launch synchronizes inside
MAX_RETRIES = 3  # per sample
OVERHEAD_SAMPLES = 3
START_WAIT = 30.0  # seconds the host waits for a start event before giving up on its own clock


@dataclass
class Attempt:
    """One try at a sample."""

    queued: bool  # the GPU had not reached the start event when everything was queued
    time: float = 0.0  # start -> end (the calls' own stream)
    device: float = 0.0  # start -> end after a device-wide sync
    host: float = 0.0  # host clock from seeing the start pass to after the sync
    enqueue: float = 0.0  # host time from launching the hold to the query
    outs: list = field(default_factory=list)
    launches: list = field(default_factory=list)
    records: list = field(default_factory=list)  # per call: its judge.untrusted.trace.Recorder, or None


def held_sample(attempt, hold: float, *, retries: int = MAX_RETRIES, max_hold: float = MAX_HOLD):
    """Run ``attempt(hold)`` until it reports a queued sample, doubling the hold each time.

    Returns (the last attempt, retries used, the hold it used). An attempt that
    is still not queued after ``retries`` retries, or at ``max_hold``, is
    returned as it is: the caller marks it invalid.
    """
    used = 0
    while True:
        got = attempt(hold)
        if got.queued or used >= retries or hold >= max_hold:
            return got, used, hold
        used += 1
        hold = min(max_hold, 2 * hold)


def next_hold(hold: float, enqueues: list[float], retried: bool) -> float:
    """The hold to start the next request with: never below what the host needed, shrinking at most by half."""
    if retried or not enqueues:
        return hold
    need = HOLD_MARGIN * max(enqueues) + HOLD_PAD
    return max(MIN_HOLD, min(hold, max(need, hold / 2)))


class Sampling:
    """The timing half of judge.untrusted.bench.BenchState, its base class: it times samples on that state's
    input sets, holds and records."""

    def _hold_gpu(self, seconds: float) -> bool:
        """Keep the current stream busy for about ``seconds`` (a spin kernel); False if there is none."""
        torch = self.torch
        if self.sleep_rate is None:
            self.sleep_rate = 0.0
            try:
                for _ in range(2):  # the first one loads the kernel
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    torch.cuda.synchronize()
                    start.record()
                    torch.cuda._sleep(1_000_000)
                    end.record()
                    end.synchronize()
                    self.sleep_rate = 1e6 / max(start.elapsed_time(end) * 1e-3, 1e-6)
            except Exception:  # noqa: BLE001 - no _sleep in this torch: time without the hold
                traceback.print_exc()
                self.sleep_rate = 0.0
        if not self.sleep_rate:
            return False
        if seconds > 0:
            torch.cuda._sleep(max(1, int(seconds * self.sleep_rate)))
        return True

    def _flush_buffer(self, nbytes: int):
        torch = self.torch
        if nbytes <= 0:
            return None
        if self.flush is None or self.flush.numel() < nbytes:
            self.flush = torch.empty(nbytes, dtype=torch.uint8, device=self.worker.device)
        return self.flush

    def _samples(self, shape, specs, samples, per_sample, base, nsets, flush_bytes, keep, cuda, ranges):
        """Time ``samples`` samples of ``per_sample`` calls; a dict of reply fields plus launches, ids, kept."""
        from judge.untrusted import guard

        torch = self.torch
        K = per_sample
        sets = self._sets(shape, specs, max(1, nsets, K), self.worker.device)
        flush = self._flush_buffer(flush_bytes) if cuda else None
        fn, prepare = self.worker.fn, self._prepare()
        launches, kept, ids, records = [], {}, set(), {}
        times, device_times, host, enqueue, valid, holds, attempts = [], [], [], [], [], [], []

        def run_calls(watch, args, index0):
            outs, counts, recs = [], [], []
            for j, a in enumerate(args):
                before = sum(watch.own_launches.values())
                out, rec = self._recorded(watch, fn, a, ranges, f"judge.call.{index0 + j}")
                outs.append(out)
                recs.append(rec)
                counts.append(sum(watch.own_launches.values()) - before)
            return outs, counts, recs

        if not cuda:
            for r in range(samples):
                args = self._inputs(specs, sets, range(r * K, (r + 1) * K), base, prepare)
                with guard.watching() as watch:
                    h0 = time.perf_counter()
                    outs, counts, recs = run_calls(watch, args, r * K)
                    h1 = time.perf_counter()
                for rec, out in zip(recs, outs):
                    if rec is not None:
                        rec.finish(out)
                times.append(h1 - h0)
                host.append(h1 - h0)
                valid.append(True)
                self.timed_ops.update(watch.ops)
                ids |= watch.kernel_ids
                launches += counts
                self._keep(outs, r * K, keep, kept)
                self._keep_records(recs, r * K, keep, records)
            return {
                "times": times,
                "host": host,
                "valid": valid,
                "overhead": [],
                "device_times": [],
                "sync_gaps": [],
                "retries": 0,
                "invalid": 0,
                "launches": launches,
                "ids": ids,
                "kept": kept,
                "records": records,
            }

        key = (shape, K)
        hold = self.holds.get(key)
        if hold is None:
            hold = self._first_hold(specs, sets, base, K, fn, prepare)
        # The judge asks every contender of a shape for the same hold at least
        # (the longest any needed): how long the GPU spun before a sample must
        # not differ between the reference and the submission.
        hold = max(hold, getattr(self, "min_hold", 0.0))
        can_hold = self._hold_gpu(0)
        graph, graph_note = None, None
        if getattr(self, "want_graph", False) and K > 1 and prepare is None:
            sets = sets[:K]  # call r*K + j of every sample runs on set j: the addresses the graph captured
            graph, graph_note = self._capture(sets, fn)
            if graph is not None:
                self.timed_ops.update(graph.ops)
                ids.update(graph.ids)
        overhead, gaps = self._overhead(flush, min(max(hold, 1e-4), 2e-4))
        retries_left = 2 * samples if can_hold else 0
        total_retries = 0
        for r in range(samples):
            calls = range(r * K, (r + 1) * K)

            def attempt(h, calls=calls, r=r):
                args = self._inputs(specs, sets, calls, base, prepare)
                torch.cuda.synchronize()
                if flush is not None:
                    flush.zero_()
                start, end, end2 = (torch.cuda.Event(enable_timing=True) for _ in range(3))
                t_hold = time.perf_counter()
                self._hold_gpu(h)
                if graph is not None:
                    # No Python of the submission runs here: the GPU replays the kernels it captured.
                    start.record()
                    if ranges is not None:
                        with ranges(f"judge.call.{r * K}"):  # the profiler: the replay's kernels, one range
                            graph.graph.replay()
                    else:
                        graph.graph.replay()
                    end.record()
                    if ranges is not None and can_hold:
                        torch.cuda._sleep(1)
                    reached = start.query()
                    outs, counts, recs = None, list(graph.counts), list(graph.records)
                else:
                    with guard.watching() as watch:
                        start.record()
                        outs, counts, recs = run_calls(watch, args, r * K)
                        end.record()  # the calls' own stream
                        if ranges is not None and can_hold:
                            torch.cuda._sleep(1)  # the marker: where the calls end on the GPU (profiling.gpu_order)
                        reached = start.query()
                    self.timed_ops.update(watch.ops)
                    ids.update(watch.kernel_ids)
                t_query = time.perf_counter()
                h_start = t_query
                if not reached:
                    while not start.query() and time.perf_counter() - t_query < START_WAIT:
                        pass
                    h_start = time.perf_counter()
                torch.cuda.synchronize()  # device-wide: work left on any other stream ends first
                end2.record()
                end2.synchronize()
                h1 = time.perf_counter()
                if outs is None:  # the replay rewrites the graph's outputs: keep a copy of this sample's
                    outs = [_copied(o) for o in graph.outs] if keep else []
                    torch.cuda.synchronize()
                if graph is None:
                    for rec, out in zip(recs, outs):  # after the sync: nothing of it ran while timed
                        if rec is not None:
                            rec.finish(out)
                return Attempt(
                    queued=not reached,
                    time=start.elapsed_time(end) * 1e-3,
                    device=start.elapsed_time(end2) * 1e-3,
                    host=h1 - h_start,
                    enqueue=t_query - t_hold,
                    outs=outs,
                    launches=counts,
                    records=recs,
                )

            got, used, hold = held_sample(attempt, hold, retries=min(MAX_RETRIES, retries_left))
            retries_left -= used
            attempts.append(used + 1)
            total_retries += used
            times.append(got.time)
            device_times.append(got.device)
            host.append(got.host)
            enqueue.append(got.enqueue)
            valid.append(got.queued)
            holds.append(hold)
            launches += got.launches
            self._keep(got.outs, r * K, keep, kept)
            self._keep_records(got.records, r * K, keep, records)
            got.outs = []
        torch.cuda.synchronize()
        self.holds[key] = next_hold(hold, [e for e, ok in zip(enqueue, valid) if ok], total_retries > 0)
        graph = None  # frees the graph's private memory pool (its outputs were copied)
        out = {
            "times": times,
            "device_times": device_times,
            "host": host,
            "enqueue": enqueue,
            "valid": valid,
            "holds": holds,
            "attempts": attempts,
            "hold_s": hold,
            "retries": total_retries,
            "invalid": valid.count(False),
            "overhead": overhead,
            "sync_gaps": gaps,
            "launches": launches,
            "ids": ids,
            "kept": kept,
            "records": records,
        }
        notes = []
        if not can_hold:
            notes.append("no spin kernel (torch.cuda._sleep) in this torch: the GPU may idle inside the timed region")
        if graph_note:
            notes.append(graph_note)
        if notes:
            out["note"] = "; ".join(notes)
        if getattr(self, "want_graph", False) and K > 1:
            out["mode"] = "graph" if graph_note is None and prepare is None else "events"
        return out

    def _capture(self, sets, fn):
        """The K calls of a sample captured into one CUDA graph: (Captured, None), or (None, why not).

        Replayed, a graph runs the captured kernels back to back with no host in
        between. Launched from a stream, the same kernels leave the GPU's front
        end a gap between them that depends on the process: several percent
        apart across identical processes, under one replayed from a graph
        (docs/measurements: clock calibration). The calls run once, watched like timed
        calls, during the capture; what cannot be captured (a host sync, say)
        is timed from the stream instead, and the judge then times every
        contender of that shape from the stream.
        """
        from judge.untrusted import guard

        torch = self.torch
        try:
            torch.cuda.synchronize()
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side), guard.watching():  # warm-up off the default stream, as capture asks
                fn(*sets[0])
            torch.cuda.current_stream().wait_stream(side)
            torch.cuda.synchronize()
            graph = torch.cuda.CUDAGraph()
            outs, counts, recs = [], [], []
            with guard.watching() as watch:
                with torch.cuda.graph(graph), streams.judges():  # its capture stream is the judge's
                    for a in sets:
                        before = sum(watch.own_launches.values())
                        out, rec = self._recorded(watch, fn, a)
                        outs.append(out)
                        recs.append(rec)
                        counts.append(sum(watch.own_launches.values()) - before)
            torch.cuda.synchronize()
            for rec, out in zip(recs, outs):
                if rec is not None:
                    rec.finish(out)
            return Captured(graph, outs, counts, dict(watch.ops), set(watch.kernel_ids), recs), None
        except Exception as exc:  # noqa: BLE001 - not capturable: timed from the stream
            try:
                torch.cuda.synchronize()
            except Exception:  # noqa: BLE001
                pass
            first = (str(exc).strip().splitlines() or [""])[0][:200]
            return (
                None,
                f"timed from the stream: the calls could not be captured in a CUDA graph ({type(exc).__name__}: {first})",
            )

    def _recorder(self, args):
        """A deferred record of the next timed call on ``args``, when the judge asked for records."""
        if not self.tracing:
            return None
        from judge.untrusted.trace import Recorder

        torch = self.torch
        return Recorder(
            [(i, a) for i, a in enumerate(args) if type(a) is torch.Tensor], self.worker.device, deferred=True
        )

    def _recorded(self, watch, fn, args, ranges=None, name: str = ""):
        """One timed call, its record (when asked for) on the watch while it runs: (result, Recorder or None)."""
        rec = watch.trace = self._recorder(args)
        try:
            if ranges is not None:
                with ranges(name):
                    out = fn(*args)
            else:
                out = fn(*args)
        finally:
            watch.trace = None
        if rec is not None:
            rec.release()  # its temporaries go when the call returns, as without the record
        return out, rec

    @staticmethod
    def _keep_records(recs, index0, keep, records):
        if keep:
            for j, rec in enumerate(recs or []):
                if rec is not None:
                    records[index0 + j] = rec

    def _keep(self, outs, index0, keep, kept):
        if outs and index0 == 0:
            self.out_bytes = _nbytes(outs[0])
        if keep:
            for j, out in enumerate(outs):
                kept[index0 + j] = out

    def _first_hold(self, specs, sets, base, K, fn, prepare) -> float:
        """The hold for K calls, from the host time of one call under the watch (as timed calls run)."""
        from judge.untrusted import guard

        torch = self.torch
        launch = []
        for _ in range(2):  # the second: the first may still pay for something done once
            (args,) = self._inputs(specs, sets, [1 << 41], base, prepare)
            torch.cuda.synchronize()
            with guard.watching() as watch:
                h0 = time.perf_counter()
                watch.trace = self._recorder(args)  # recorded as a timed call is: its host time counts
                out = fn(*args)
                watch.trace = None
                launch.append(time.perf_counter() - h0)
            self.timed_ops.update(watch.ops)
            del out
            torch.cuda.synchronize()
        return min(MAX_HOLD, max(MIN_HOLD, HOLD_MARGIN * K * launch[-1] + HOLD_PAD))

    def _overhead(self, flush, hold: float):
        """The timed sequence with no call in it: event resolution, and the gap a device-wide sync adds."""
        from judge.untrusted import guard

        torch = self.torch
        overhead, spare = [], []
        for _ in range(OVERHEAD_SAMPLES + 2):
            torch.cuda.synchronize()
            if flush is not None:
                flush.zero_()
            start, end, end2 = (torch.cuda.Event(enable_timing=True) for _ in range(3))
            self._hold_gpu(hold)
            with guard.watching():
                start.record()
                end.record()
                reached = start.query()
            torch.cuda.synchronize()
            end2.record()
            end2.synchronize()
            pair = (start.elapsed_time(end) * 1e-3, end.elapsed_time(end2) * 1e-3)
            (spare if reached else overhead).append(pair)
            if len(overhead) >= OVERHEAD_SAMPLES:
                break
        use = overhead or spare
        return [a for a, _ in use], [b for _, b in use]


@dataclass
class Captured:
    """A sample's K calls in one CUDA graph, with what the capture saw."""

    graph: object
    outs: list  # each call's result: the graph's own memory, rewritten by every replay
    counts: list  # own kernel launches per call
    ops: dict
    ids: set
    records: list = field(default_factory=list)  # per call: its Recorder (None when not asked for)


def _copied(result):
    """A copy of a call's result (exact tensors cloned, tuples and lists of them too; anything else as is)."""
    import torch

    if type(result) is torch.Tensor:
        return result.clone()
    if type(result) in (tuple, list):
        return type(result)(_copied(x) for x in result)
    return result


def _nbytes(result) -> int:
    """Bytes of the tensors a call returned (what holding its outputs costs)."""
    import torch

    items = list(result) if type(result) in (tuple, list) else [result]
    # Only exact tensors are asked anything: a subclass could run code on any call.
    return sum(t.numel() * t.element_size() for t in items if type(t) is torch.Tensor)
