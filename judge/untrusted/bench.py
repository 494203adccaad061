"""The worker's side of the timing protocol: run and time calls, decide nothing.

A ``bench`` request names one benchmark shape by its inputs (see bench_inputs),
a secret seed, how many calls and how to time them. For each timed call the
worker writes fresh inputs (from a new seed, into one of several input sets
that rotate, so addresses change too), waits for that to finish, flushes the
L2 cache by writing a buffer twice its size, and times the call:

* ``events``: CUDA events around the call, with a device-wide
  torch.cuda.synchronize() *before* the end event is recorded, so work the
  call left on any other stream is inside the measurement. The sync adds a
  few microseconds; the same sequence without the call is timed too
  (``overhead``) and the judge subtracts its median.
* ``graph``: for launch-bound shapes (a few microseconds of GPU work, where
  launch overhead would be most of an event time), ``graph_calls`` calls on
  as many input sets are captured in one CUDA graph, and each replay is timed
  with events on the replay stream (a capture must join every stream it
  forks, so the replay's end covers all its work) and divided by the number
  of calls. The L2 is not flushed inside a graph: these inputs are tiny, and
  a flush would cost ten times the call. If capture fails (the submission
  synchronizes, for instance), the request falls back to events and says so.
* ``cpu``: time.perf_counter around each call, for interpreter mode only:
  a test of the protocol, not a speed claim.

The reply carries the raw per-call times, the host time around each call and
the worker's own wall clock for the whole request; the judge computes every
statistic and cross-checks these clocks against its own. The outputs of the
last request of each shape stay on the device, so that the judge can ask,
after timing, for those of a call of its choosing (``bench_check``) and
verify them against inputs it regenerates from the seed.
"""

from __future__ import annotations

import time
import traceback
from collections import Counter

from judge.shared import bench_inputs
from judge.untrusted.outputs import describe_outputs, kind_of


class BenchState:
    """Per-shape input sets, captured graphs and held outputs of one worker."""

    def __init__(self, worker):
        self.worker = worker
        self.torch = worker.torch
        self.sets: dict[int, list] = {}  # shape -> input sets
        self.specs: dict[int, list] = {}
        self.graphs: dict[int, tuple] = {}  # shape -> (graph, outputs, calls) or None if capture failed
        self.kept: dict[int, dict] = {}  # shape -> {call index: result}
        self.flush = None
        self.prepare = False  # set per request from the judge's message
        self.out_bytes = 0
        self.sleep_rate: float | None = None  # torch.cuda._sleep cycles per second, measured once
        self.device_times: list[float] = []  # per call: start event to after a device-wide sync
        self.sync_gaps: list[float] = []  # the same gap with no call in between

    # ------------------------------------------------------------------ pieces

    def _hold_gpu(self, seconds: float) -> None:
        """Keep the current stream busy for about ``seconds`` (a spin kernel)."""
        if seconds <= 0:
            return
        torch = self.torch
        if self.sleep_rate is None:
            self.sleep_rate = 0.0
            try:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                torch.cuda.synchronize()
                start.record()
                torch.cuda._sleep(1_000_000)
                end.record()
                end.synchronize()
                self.sleep_rate = 1e6 / max(start.elapsed_time(end) * 1e-3, 1e-6)
            except Exception:  # noqa: BLE001 - no _sleep in this torch: time without the hold
                traceback.print_exc()
        if self.sleep_rate:
            torch.cuda._sleep(max(1, int(seconds * self.sleep_rate)))

    def _sets(self, shape: int, specs: list, count: int, device: str) -> list:
        if self.specs.get(shape) != specs or len(self.sets.get(shape, [])) < count:
            self.graphs.pop(shape, None)
            self.kept.pop(shape, None)
            self.sets[shape] = [bench_inputs.allocate(specs, device) for _ in range(count)]
            self.specs[shape] = specs
        return self.sets[shape]

    def _flush_buffer(self, nbytes: int):
        torch = self.torch
        if nbytes <= 0:
            return None
        if self.flush is None or self.flush.numel() < nbytes:
            self.flush = torch.empty(nbytes, dtype=torch.uint8, device=self.worker.device)
        return self.flush

    # ------------------------------------------------------------------ request

    def run(self, msg: dict) -> dict:
        """Handle one bench request; returns the reply (without tensors)."""
        from judge.untrusted import guard, integrity

        torch = self.torch
        wall0 = time.perf_counter()
        self.device_times, self.sync_gaps = [], []
        self.timed_ops = Counter()
        shape, specs, calls = int(msg["shape"]), msg["args"], int(msg["calls"])
        mode = msg.get("mode", "events")
        base = int(msg["seed"])
        keep = bool(msg.get("keep"))
        self.prepare = bool(msg.get("prepare"))
        cuda = self.worker.device.startswith("cuda")
        note = None
        reply = {"type": "bench_result", "id": msg.get("id"), "status": "ok", "shape": shape}
        # Timed calls run as a user would run them: no NaN fill of fresh memory
        # (it would add a write pass to every allocation) and no deterministic
        # algorithms; both are restored before the next correctness case.
        saved = (torch.are_deterministic_algorithms_enabled(), torch.utils.deterministic.fill_uninitialized_memory)
        torch.use_deterministic_algorithms(False)
        torch.utils.deterministic.fill_uninitialized_memory = False
        baseline = integrity.snapshot()
        try:
            evidence = {}
            if msg.get("watch"):
                # One untimed call under the full watch: which kernels ran, and no torch operator did the work.
                args = self._sets(shape, specs, 1, self.worker.device)[0]
                bench_inputs.fill(specs, args, bench_inputs.call_seed(base, 1 << 40))
                prepare = self._prepare()
                if prepare is not None:
                    args = prepare(*args)
                with guard.watching() as watch:
                    out = self.worker.fn(*args)
                self.out_bytes = _nbytes(out)
                del out
                if cuda:
                    torch.cuda.synchronize()
                evidence.update(own_launches=dict(watch.own_launches), other_launches=dict(watch.other_launches),
                                torch_ops=dict(watch.ops))
            if mode == "graph" and (not cuda or self._prepare() is not None):
                mode = "events"  # a prepared baseline (autograd) is not captured
            if mode == "graph":
                result = self._graph(shape, specs, calls, base, int(msg.get("graph_calls", 16)))
                if isinstance(result, str):
                    note = f"CUDA graph capture failed ({result}); timed with events instead"
                    mode = "events"
                else:
                    times, host, kept, launches, ids = result
                    overhead = []
            if mode != "graph":
                mode = "events" if cuda else "cpu"
                times, host, overhead, kept, launches, ids = self._calls(shape, specs, calls, base, mode,
                                                                        int(msg.get("sets", 2)),
                                                                        int(msg.get("flush_bytes", 0)), keep)
            evidence["calls_without_own_launch"] = sum(1 for n in launches if n == 0)
            timed_ops = getattr(self, "timed_ops", None)
            if timed_ops:
                merged = Counter(evidence.get("torch_ops") or {})
                merged.update(timed_ops)
                evidence["torch_ops"] = dict(merged)
            evidence["started"] = guard.take_events()
            evidence["tampered"] = integrity.changed(baseline)
            self.kept[shape] = kept if keep else {}
            reply.update(mode=mode, out_bytes=self.out_bytes, times=times, host=host, overhead=overhead,
                         device_times=self.device_times, sync_gaps=self.sync_gaps, checkable=sorted(self.kept[shape]),
                         evidence=evidence, kernels=guard.kernels(ids), compile=guard.compile_stats())
            if note:
                reply["note"] = note
        finally:
            torch.use_deterministic_algorithms(saved[0], warn_only=True)
            torch.utils.deterministic.fill_uninitialized_memory = saved[1]
        reply["worker_wall"] = time.perf_counter() - wall0
        return reply

    def _calls(self, shape, specs, calls, base, mode, nsets, flush_bytes, keep):
        """Events (GPU) or perf_counter (CPU) around each call, fresh inputs and a cold L2 before each."""
        from judge.untrusted import guard

        torch = self.torch
        cuda = mode == "events"
        sets = self._sets(shape, specs, max(1, nsets), self.worker.device)
        flush = self._flush_buffer(flush_bytes) if cuda else None
        times, host, overhead, launches, kept, ids = [], [], [], [], {}, set()
        self.timed_ops = Counter()
        self.device_times, self.sync_gaps = [], []
        # Timed calls are watched like judged ones (the hold below hides the
        # watch's host cost): a submission cannot fall back to PyTorch only
        # when it is being timed.
        fn = self.worker.fn
        prepare = self._prepare()
        delay = 0.0
        if cuda:
            # How long the host takes to launch one call (Python, Triton's
            # launcher): the GPU is held busy that long (and half again) before
            # the start event, so the launch is queued by the time the clock
            # starts. Without this an H200 counted ~70 us of idle GPU per call
            # (a 4096-element add timed at 89 us).
            args = sets[0]
            bench_inputs.fill(specs, args, bench_inputs.call_seed(base, 1 << 41))
            if prepare is not None:
                args = prepare(*args)
            torch.cuda.synchronize()
            h0 = time.perf_counter()
            del_out = fn(*args)
            launch = time.perf_counter() - h0
            del del_out
            torch.cuda.synchronize()
            delay = min(2e-3, 1.5 * launch + 20e-6)
            for _ in range(5):
                # The same sequence with nothing in it: event resolution, and
                # the gap a device-wide sync adds after the stream's end.
                torch.cuda.synchronize()
                if flush is not None:
                    flush.zero_()
                self._hold_gpu(delay)
                start, end, end2 = (torch.cuda.Event(enable_timing=True) for _ in range(3))
                start.record()
                end.record()
                torch.cuda.synchronize()
                end2.record()
                end2.synchronize()
                overhead.append(start.elapsed_time(end) * 1e-3)
                self.sync_gaps.append(end.elapsed_time(end2) * 1e-3)
        for i in range(calls):
            args = sets[i % len(sets)]
            bench_inputs.fill(specs, args, bench_inputs.call_seed(base, i))
            if prepare is not None:
                args = prepare(*args)
            if cuda:
                torch.cuda.synchronize()
                if flush is not None:
                    flush.zero_()
                self._hold_gpu(delay)
                start, end, end2 = (torch.cuda.Event(enable_timing=True) for _ in range(3))
                with guard.watching() as watch:
                    h0 = time.perf_counter()
                    start.record()
                    out = fn(*args)
                    end.record()  # the call's own stream
                    torch.cuda.synchronize()  # device-wide: work left on any other stream ends first
                    end2.record()
                    end2.synchronize()
                    h1 = time.perf_counter()
                times.append(start.elapsed_time(end) * 1e-3)
                self.device_times.append(start.elapsed_time(end2) * 1e-3)
                # The host waited for what was left of the hold too: take it out,
                # so the judge's clock check compares like with like.
                h1 -= min(delay, max(0.0, (h1 - h0) - times[-1]))
            else:
                with guard.watching() as watch:
                    h0 = time.perf_counter()
                    out = fn(*args)
                    h1 = time.perf_counter()
                times.append(h1 - h0)
            host.append(h1 - h0)
            launches.append(sum(watch.own_launches.values()))
            self.timed_ops.update(watch.ops)
            ids |= watch.kernel_ids
            if i == 0:
                self.out_bytes = _nbytes(out)
            if keep:
                kept[i] = out
            del out
        return times, host, overhead, kept, launches, ids

    def _prepare(self):
        """The trusted PyTorch baseline's untimed set-up per input set (e.g. the forward pass whose
        backward is timed); the judge asks for it only for that worker, never for a submission."""
        if not self.prepare:
            return None
        import sys

        return getattr(sys.modules.get("submission"), "bench_prepare", None)

    def _graph(self, shape, specs, calls, base, per_graph):
        """Replays of one CUDA graph holding ``per_graph`` calls; a string says why capture failed."""
        from judge.untrusted import guard

        torch = self.torch
        sets = self._sets(shape, specs, per_graph, self.worker.device)
        fn = self.worker.fn
        entry = self.graphs.get(shape)
        if entry is None and shape in self.graphs:
            return "an earlier capture failed"
        launches = [0] * per_graph
        if entry is None or entry[2] != per_graph:
            try:
                for k in range(per_graph):
                    bench_inputs.fill(specs, sets[k], bench_inputs.call_seed(base, k))
                self.out_bytes = _nbytes(fn(*sets[0]))  # compiled and autotuned before capture
                torch.cuda.synchronize()
                graph = torch.cuda.CUDAGraph()
                with guard.watching() as watch:
                    with torch.cuda.graph(graph):
                        outs = []
                        for k in range(per_graph):
                            before = sum(watch.own_launches.values())
                            outs.append(fn(*sets[k]))
                            launches[k] = sum(watch.own_launches.values()) - before
                self.timed_ops = Counter(watch.ops)
                torch.cuda.synchronize()
            except Exception as exc:  # noqa: BLE001 - capture refused: fall back to events
                traceback.print_exc()
                self.graphs[shape] = None
                try:
                    torch.cuda.synchronize()
                except Exception:  # noqa: BLE001
                    raise exc from None
                return f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
            entry = (graph, outs, per_graph, launches, set(watch.kernel_ids))
            self.graphs[shape] = entry
        graph, outs, _, launches, ids = entry
        times, host = [], []
        for r in range(calls):
            for k in range(per_graph):
                bench_inputs.fill(specs, sets[k], bench_inputs.call_seed(base, r * per_graph + k))
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            h0 = time.perf_counter()
            start.record()
            graph.replay()
            end.record()
            end.synchronize()
            h1 = time.perf_counter()
            times.append(start.elapsed_time(end) * 1e-3 / per_graph)
            host.append((h1 - h0) / per_graph)
        torch.cuda.synchronize()
        last = (calls - 1) * per_graph
        kept = {last + k: outs[k] for k in range(per_graph)}
        return times, host, kept, launches, ids

    # ------------------------------------------------------------------ check

    def check(self, msg: dict):
        """The held outputs of one timed call: (reply, tensors)."""
        shape, call = int(msg["shape"]), int(msg["call"])
        kept = self.kept.get(shape, {})
        if call not in kept:
            return {"type": "bench_outputs", "id": msg.get("id"), "status": "missing"}, []
        result = kept[call]
        outputs, tensors = describe_outputs(result)
        for out in outputs:
            out.pop("ptr_range", None)
        return {"type": "bench_outputs", "id": msg.get("id"), "status": "ok", "returned": kind_of(result),
                "outputs": outputs}, tensors

    def release(self) -> None:
        self.sets.clear()
        self.graphs.clear()
        self.kept.clear()
        self.flush = None


def _nbytes(result) -> int:
    """Bytes of the tensors a call returned (what holding its outputs costs)."""
    import torch

    items = list(result) if type(result) in (tuple, list) else [result]
    # Only exact tensors are asked anything: a subclass could run code on any call.
    return sum(t.numel() * t.element_size() for t in items if type(t) is torch.Tensor)
