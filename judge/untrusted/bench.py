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
from collections import Counter

from judge.shared import bench_inputs
from judge.untrusted import determinism, streams
from judge.untrusted.outputs import describe_outputs, kind_of
from judge.untrusted.samples import MAX_HOLD, Sampling, _nbytes

SMALL_SETS = 256 << 20  # input sets up to this many bytes (all of them) move for every request (_move_sets)


class BenchState(Sampling):
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

    def _sets(self, shape: int, specs: list, count: int, device: str) -> list:
        if self.specs.get(shape) != specs or len(self.sets.get(shape, [])) < count:
            self.kept.pop(shape, None)
            self.sets[shape] = [bench_inputs.allocate(specs, device) for _ in range(count)]
            self.specs[shape] = specs
        return self.sets[shape]

    def _move_sets(self, shape: int, specs: list, base: int) -> None:
        """Small input sets move to new addresses for every timed request.

        A call of a few microseconds is sensitive to where its data lives (which
        memory channels and L2 slices, which pages): one process's placement can
        run a microsecond matmul several percent faster than an identical
        process's, for the whole run (docs/measurements: clock calibration). New
        addresses per request, behind a pad of a size drawn from the request's
        seed, turn that into noise that the rounds average out. Large sets span
        every channel anyway and are kept (moving them costs real time).
        """
        torch = self.torch
        if bench_inputs.nbytes(specs) * max(1, len(self.sets.get(shape, []))) > SMALL_SETS:
            return
        import random

        self.sets.pop(shape, None)  # _samples allocates them again, after the pad
        self.pad = None
        self.pad = torch.empty(
            512 * random.Random(base).randrange(1, 4096), dtype=torch.uint8, device=self.worker.device
        )

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
        with streams.timed():
            return self._run(msg)

    def _run(self, msg: dict) -> dict:
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
        prof, why_not = profiling.start(torch, cuda) if profile else (None, None)
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
                evidence.update(
                    own_launches=dict(watch.own_launches),
                    other_launches=dict(watch.other_launches),
                    torch_ops=dict(watch.ops),
                )
            ranges = profiling.range_factory(torch) if prof is not None else None
            if profile and prof is None:
                result = None  # the profiler is not there: nothing to run
            else:
                if cuda and not profile:
                    self._move_sets(shape, specs, base)
                self.min_hold = max(0.0, min(float(msg.get("min_hold") or 0.0), MAX_HOLD))
                self.want_graph = bool(msg.get("graph"))
                result = self._samples(
                    shape,
                    specs,
                    samples,
                    per_sample,
                    base,
                    int(msg.get("sets", 2)),
                    int(msg.get("flush_bytes", 0)),
                    keep,
                    cuda,
                    ranges,
                )
            if result is not None:
                counts, ids, kept = result.pop("launches"), result.pop("ids"), result.pop("kept")
                records = result.pop("records")
                evidence["calls_without_own_launch"] = sum(1 for n in counts if n == 0)
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
            reply.update(
                mode=mode,
                per_sample=per_sample,
                out_bytes=self.out_bytes,
                **(result or {}),
                checkable=sorted(self.kept.get(shape, {})) if not profile else [],
                evidence=evidence,
                kernels=launches.kernels(ids),
                compile=launches.compile_stats(),
            )
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
        reply = {
            "type": "bench_outputs",
            "id": msg.get("id"),
            "status": "ok",
            "returned": kind_of(result),
            "outputs": outputs,
        }
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
