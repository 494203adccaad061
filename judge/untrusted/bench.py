"""The worker's side of the timing protocol: run and time calls, decide nothing.

A ``bench`` request names one benchmark shape by its inputs (see bench_inputs),
a secret seed, how many *samples* to time and how many calls each sample
holds (``per_sample``, K). Call ``c`` of the request gets the inputs of
``call_seed(seed, c)``, written into input set ``c % sets`` (sets rotate, so
addresses change too; a sample's K calls always have K distinct sets).

One sample on a GPU (``events``):

1. write the inputs of its K calls, wait for that to finish;
2. flush the L2 cache (write a buffer twice its size): every call of the
   sample then reads its inputs from memory, as the fills left them behind the
   flush;
3. hold the GPU with a spin kernel (``torch.cuda._sleep``), record the start
   event, launch the K calls (under the operator watch, like judged calls),
   record the end event on the call's stream;
4. *before* waiting for anything, ask whether the GPU has already passed the
   start event (``start.query()``). If it has not, every call was queued
   before the clock started, so the event time is the GPU's work alone, with
   no host time in it. If it has, the hold was too short and the GPU may have
   idled between kernels: the sample is invalid, the hold is doubled and the
   sample is redone (a few times at most; the reply counts the retries and
   says which samples stayed invalid);
5. wait for the start event to pass (the host's own clock of the GPU work
   starts there), synchronize the whole device and record a second end event:
   its distance from the first shows work the call left on other streams.

The hold starts from the host time of one call measured under the watch (the
conditions of timed calls), times K, with margin, and is kept per shape and K
from request to request (shrinking towards what the host really needed).
Each request also times the same sequence with no call in it a few times
(``overhead``, ``sync_gaps``); the judge subtracts the median and divides by K.

On the CPU (``cpu``, interpreter mode) the sample is time.perf_counter around
its calls: a test of the protocol, not a speed claim.

With ``profile`` set, the request runs its samples under the CUDA profiler
instead (judge.untrusted.profiling): per sample, the GPU span of the kernels
its calls launched, by the GPU's own timestamps; a second clock for the judge
to hold the events against. Profiled requests never replace the outputs the
judge may still ask for.

With ``trace`` set, every timed call's launch sequence is recorded as a
judged call's is (judge.untrusted.trace, in its deferred form: nothing waits
for the GPU inside a sample or a graph capture), so that the judge can replay
the call whose outputs it checks alone on fresh inputs (judge.replay); the
record of a captured call stands for that call in every replay of the graph.

The reply carries the raw per-sample times, the host times and the worker's
own wall clock for the whole request; the judge computes every statistic and
cross-checks these clocks against its own. The outputs of the last timed
request of each shape stay on the device, so that the judge can ask, after
timing, for those of a call of its choosing (``bench_check``) and verify them
against inputs it regenerates from the seed.
"""

from __future__ import annotations

import time
import traceback
from collections import Counter
from dataclasses import dataclass, field

from judge.shared import bench_inputs
from judge.untrusted import determinism, streams
from judge.untrusted.outputs import describe_outputs, kind_of

HOLD_MARGIN = 1.5  # the hold is this many times the host time it must cover ...
HOLD_PAD = 50e-6  # ... plus this
MIN_HOLD = 30e-6
MAX_HOLD = 0.1  # seconds: a call that needs longer to launch synchronizes inside
MAX_RETRIES = 3  # per sample
SMALL_SETS = 256 << 20  # input sets up to this many bytes (all of them) move for every request (_move_sets)
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


class BenchState:
    """Per-shape input sets, holds and held outputs of one worker."""

    def __init__(self, worker):
        self.worker = worker
        self.torch = worker.torch
        self.sets: dict[int, list] = {}  # shape -> input sets
        self.specs: dict[int, list] = {}
        self.kept: dict[int, dict] = {}  # shape -> {call index: result}
        self.records: dict[int, dict] = {}  # shape -> {call index: its Recorder}, when the judge asked for them
        self.tracing = False  # set per request from the judge's message
        self.holds: dict[tuple, float] = {}  # (shape, K) -> seconds of hold that covered the launches
        self.flush = None
        self.prepare = False  # set per request from the judge's message
        self.out_bytes = 0
        self.sleep_rate: float | None = None  # torch.cuda._sleep cycles per second, measured once
        self.timed_ops = Counter()

    # ------------------------------------------------------------------ pieces

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

    def _sets(self, shape: int, specs: list, count: int, device: str) -> list:
        if self.specs.get(shape) != specs or len(self.sets.get(shape, [])) < count:
            self.kept.pop(shape, None)
            self.sets[shape] = [bench_inputs.allocate(specs, device) for _ in range(count)]
            self.specs[shape] = specs
        return self.sets[shape]

    def _move_sets(self, shape: int, specs: list, base: int) -> None:
        """Small input sets move to new addresses for every timed request.

        A call of a few microseconds is sensitive to where its data lives (which
        memory channels and L2 slices, which pages): on the H200 one process's
        placement ran a 4 us matmul 5% faster than an identical process's, for
        the whole run. New addresses per request, behind a pad of a size drawn
        from the request's seed, turn that into noise that the rounds average
        out. Large sets span every channel anyway and are kept (moving them
        costs real time).
        """
        torch = self.torch
        if bench_inputs.nbytes(specs) * max(1, len(self.sets.get(shape, []))) > SMALL_SETS:
            return
        import random

        self.sets.pop(shape, None)  # _samples allocates them again, after the pad
        self.pad = None
        self.pad = torch.empty(512 * random.Random(base).randrange(1, 4096), dtype=torch.uint8,
                               device=self.worker.device)

    def _flush_buffer(self, nbytes: int):
        torch = self.torch
        if nbytes <= 0:
            return None
        if self.flush is None or self.flush.numel() < nbytes:
            self.flush = torch.empty(nbytes, dtype=torch.uint8, device=self.worker.device)
        return self.flush

    def _inputs(self, specs, sets, calls, base, prepare):
        """Fresh inputs of these call indices, each in its own set."""
        out = []
        for c in calls:
            args = sets[c % len(sets)]
            bench_inputs.fill(specs, args, bench_inputs.call_seed(base, c))
            out.append(prepare(*args) if prepare is not None else args)
        return out

    # ------------------------------------------------------------------ request

    def run(self, msg: dict) -> dict:
        """Handle one bench request; returns the reply (without tensors)."""
        from judge.untrusted import constants, guard, integrity, launches, profiling, spawns

        torch = self.torch
        wall0 = time.perf_counter()
        self.timed_ops = Counter()
        shape, specs = int(msg["shape"]), msg["args"]
        samples = max(1, int(msg.get("samples", msg.get("calls", 5))))
        per_sample = max(1, int(msg.get("per_sample", 1)))
        base = int(msg["seed"])
        profile = bool(msg.get("profile"))
        # Profiled requests hold their outputs as timed ones do (a call that writes into the memory the
        # last one freed runs differently), but never replace those the judge may still ask for.
        keep = bool(msg.get("keep"))
        self.prepare = bool(msg.get("prepare"))
        if msg.get("retune"):
            launches.forget_tuning()  # the watched call below tunes again, on the GPU the judge now holds alone
        self.tracing = bool(msg.get("trace")) and not profile  # (kept only with the outputs, below)
        cuda = self.worker.device.startswith("cuda")
        mode = "events" if cuda else "cpu"
        reply = {"type": "bench_result", "id": msg.get("id"), "status": "ok", "shape": shape}
        # Timed calls run as a user would run them: no NaN fill of fresh memory
        # (it would add a write pass to every allocation) and no deterministic
        # algorithms; both are restored before the next correctness case.
        saved = determinism.switch(torch, False)
        prof, why_not = (profiling.start(torch, cuda) if profile else (None, None))
        # Taken after the profiler started: starting it may import modules that rewrap torch functions.
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
            ranges = profiling.range_factory(torch) if prof is not None else None
            if profile and prof is None:
                result = None  # the profiler is not there: nothing to run
            else:
                if cuda and not profile:
                    self._move_sets(shape, specs, base)
                self.min_hold = max(0.0, min(float(msg.get("min_hold") or 0.0), MAX_HOLD))
                self.want_graph = bool(msg.get("graph"))
                result = self._samples(shape, specs, samples, per_sample, base, int(msg.get("sets", 2)),
                                       int(msg.get("flush_bytes", 0)), keep, cuda, ranges)
            if result is not None:
                launches, ids, kept = result.pop("launches"), result.pop("ids"), result.pop("kept")
                records = result.pop("records")
                evidence["calls_without_own_launch"] = sum(1 for n in launches if n == 0)
            else:
                ids, kept, records = set(), {}, {}
                evidence["calls_without_own_launch"] = 0
            if self.timed_ops:
                merged = Counter(evidence.get("torch_ops") or {})
                merged.update(self.timed_ops)
                evidence["torch_ops"] = dict(merged)
            evidence["started"] = spawns.take_events()
            evidence["tampered"] = integrity.changed(baseline) + constants.take() + streams.take()
            if not profile:
                self.kept[shape] = kept if keep else {}
                self.records[shape] = records if keep else {}
            if result is not None and result.get("mode"):
                mode = result.pop("mode")
            reply.update(mode=mode, per_sample=per_sample, out_bytes=self.out_bytes, **(result or {}),
                         checkable=sorted(self.kept.get(shape, {})) if not profile else [],
                         evidence=evidence, kernels=launches.kernels(ids), compile=launches.compile_stats())
        finally:
            if prof is not None:
                recs, why_not = profiling.stop(prof)
            determinism.restore(torch, saved)
        if profile:
            if prof is None or recs is None:
                reply["profile"] = {"status": "unavailable", "note": why_not}
            else:
                groups = [list(range(r * per_sample, (r + 1) * per_sample)) for r in range(samples)]
                reply["profile"] = profiling.summarize(recs, groups, reply.get("attempts"))
                if not cuda:
                    reply["profile"].update(status="cpu", note="no GPU: the profiler recorded the CPU only")
        reply["worker_wall"] = time.perf_counter() - wall0
        return reply

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
            return {"times": times, "host": host, "valid": valid, "overhead": [], "device_times": [],
                    "sync_gaps": [], "retries": 0, "invalid": 0, "launches": launches, "ids": ids, "kept": kept,
                    "records": records}

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
                return Attempt(queued=not reached, time=start.elapsed_time(end) * 1e-3,
                               device=start.elapsed_time(end2) * 1e-3, host=h1 - h_start,
                               enqueue=t_query - t_hold, outs=outs, launches=counts, records=recs)

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
        out = {"times": times, "device_times": device_times, "host": host, "enqueue": enqueue, "valid": valid,
               "holds": holds, "attempts": attempts, "hold_s": hold, "retries": total_retries, "invalid": valid.count(False),
               "overhead": overhead, "sync_gaps": gaps, "launches": launches, "ids": ids, "kept": kept,
               "records": records}
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
        end a gap between them that depends on the process: on the H200 a 2 us
        add measured 2.04-2.15 us per call across six identical processes
        (5.5%), and 1.67-1.68 us (0.7%) replayed from a graph
        (tests/bench/launch_gaps.py). The calls run once, watched like timed
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
            return None, f"timed from the stream: the calls could not be captured in a CUDA graph ({type(exc).__name__}: {first})"

    def _recorder(self, args):
        """A deferred record of the next timed call on ``args``, when the judge asked for records."""
        if not self.tracing:
            return None
        from judge.untrusted.trace import Recorder

        torch = self.torch
        return Recorder([(i, a) for i, a in enumerate(args) if type(a) is torch.Tensor], self.worker.device,
                        deferred=True)

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
        overhead, gaps, spare = [], [], []
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

    def _prepare(self):
        """The trusted PyTorch baseline's untimed set-up per input set (e.g. the forward pass whose
        backward is timed); the judge asks for it only for that worker, never for a submission."""
        if not self.prepare:
            return None
        import sys

        return getattr(sys.modules.get("submission"), "bench_prepare", None)

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
        reply = {"type": "bench_outputs", "id": msg.get("id"), "status": "ok", "returned": kind_of(result),
                 "outputs": outputs}
        rec = self.records.get(shape, {}).get(call)
        if rec is not None:
            # The call's launch sequence for the replay check; its outside memory's frames follow the outputs'.
            reply["trace"], snapshots = rec.complete()
            tensors = tensors + snapshots
        return reply, tensors

    def trim(self, msg: dict) -> dict:
        """After the timed rounds, before the judge gives the GPU back, once it has fetched the outputs it will
        check: let go of everything this worker holds for timing (the input sets, the flush buffer, every call's
        outputs and records), so that a speed run's checks, beside other judges' work, hold no GPU memory of its
        rounds. (Nothing is kept selectively: which calls are checked must not show in which outputs are dropped.)"""
        self.kept.clear()
        self.records.clear()
        self.sets.clear()
        self.specs.clear()
        self.flush = None
        self.pad = None
        torch = self.torch
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        return {"type": "bench_trimmed", "id": msg.get("id"), "status": "ok"}

    def release(self) -> None:
        self.sets.clear()
        self.kept.clear()
        self.records.clear()
        self.flush = None


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
