"""How to time each bench shape: the warm-up that measures every contender's pace, and the plan made from it.

One plan per shape, the same for every contender: K calls per timed sample (enough for ``sample_target`` of
GPU work at the fastest contender's pace), the samples per request, the input sets, the flush, and whether a
sample of K calls is replayed from a CUDA graph.
"""

from __future__ import annotations

import math
import secrets

from judge import gpu_budget
from judge.options import torch_index
from judge.shared import bench_inputs
from judge.timing import stats
from judge.timing.contenders import request
from judge.timing.findings import BaselineLost, shape_label
from judge.timing.measure import net_times
from judge.timing.verify import rule_checks

SAMPLE_TARGET = 100e-6  # seconds of GPU work a timed sample should hold: shorter calls are batched K to a sample
MAX_PER_SAMPLE = 64


class Planner:
    """Warms the contenders up and plans each shape. ``ceilings``: the GPU's (judge.timing.ceilings), once
    measured on the GPU held alone; ``warmed``: the shapes warmed up ahead of the lock; ``held``: per shape,
    the submission's warm-up request kept to be checked ahead (its reply and seed)."""

    def __init__(self, problem, config, workers, notes, *, file: str, cuda: bool, gpu: int, stopping):
        self.problem = problem
        self.config = config
        self.workers = workers
        self.notes = notes
        self.file = file
        self.cuda = cuda
        self.gpu = gpu
        self.stopping = stopping
        self.ceilings: dict = {}
        self.warmed: set[int] = set()
        self.held: dict[int, tuple] = {}

    def warm_up(self, s: int, params: dict, *, retune: bool = False, keep: bool = False) -> tuple[dict, int]:
        """Every worker's warm-up on shape s: one untimed call under the full watch (it compiles, autotunes, and
        its evidence goes through the rulebook) and two timed samples. (Each contender's pace, the submission's
        output bytes.) ``retune``: each worker first forgets the configs its autotuners chose (they were timed
        beside other work, by the warm-up ahead of the lock: judge.untrusted.launches.forget_tuning), so that the
        call tunes them again on the GPU held alone; the compiled kernels stay. ``keep``: the submission's
        worker holds its samples' outputs and records, to be checked (judge.timing.verify.Verifier.check_ahead)."""
        specs = self.problem.golden.bench_args(dict(params))
        flush = 2 * int(self.l2())
        estimates, out_bytes = {}, 0
        for c in list(self.workers.contenders):
            if self.stopping.is_set():
                break
            held = keep and c.name == "submission"
            msg = {
                "type": "bench",
                "id": f"{s}-warmup",
                "shape": s,
                "args": specs,
                "samples": 2,
                "per_sample": 1,
                "seed": secrets.randbits(62),
                "sets": 1,
                "flush_bytes": flush,
                "keep": held,
                "watch": True,
                "retune": retune,
                "prepare": c.name == "pytorch",
                "trace": self.workers.replayer is not None and c.name != "pytorch",
            }
            try:
                reply, _ = request(c, msg)
            except BaselineLost as lost:
                self.workers.drop_baseline(lost, self.notes)
                continue
            if c.name == "submission":
                rule_checks(self.file, reply, params, warmup=True)
                out_bytes = reply.out_bytes
                if held:
                    self.held[s] = (reply, msg["seed"])
            net = net_times(reply)
            if net:
                estimates[c.name] = stats.median(net)
        return estimates, out_bytes

    def l2(self) -> int:
        """The GPU's L2 bytes (the flush between samples is twice that): the device's own figure, the one the
        ceilings record, read without measuring them (the warm-up ahead of the lock must not: they are
        measured on the GPU held alone, in SpeedRun._timed)."""
        if not self.cuda:
            return 0
        if self.ceilings:
            return int(self.ceilings.get("l2_bytes", 0))
        import torch

        return int(getattr(torch.cuda.get_device_properties(torch_index(self.gpu)), "L2_cache_size", 0) or 0)

    def plan(self, s: int, params: dict) -> dict:
        """Warm every worker up on shape s (one watched call each; when prewarmed, again, compiled now, on the GPU
        held alone: the rulebook, the autotuners' choices and the paces from there) and choose how to time it.

        One plan per shape, the same for every contender: K calls per sample
        (enough for the fastest contender's sample to hold ``sample_target`` of
        GPU work), how many samples per request, how many input sets, the flush.
        """
        golden = self.problem.golden
        specs = golden.bench_args(dict(params))
        set_bytes = max(1, bench_inputs.nbytes(specs))
        # Each shape's share of what a timed worker may hold (judge.gpu_budget): the plan keeps to it, so the
        # memory the judge reserved for the speed run is enough whatever the shapes.
        shapes = max(1, len(self.config.shapes))
        set_budget, keep_budget = gpu_budget.TIMED_SETS_BYTES // shapes, gpu_budget.TIMED_KEEP_BYTES // shapes
        l2 = self.l2()
        # Warmed up ahead, beside other judges' cases: what was timed then (the paces, an autotuner's choice) says
        # little about the GPU alone, so the warm-up runs again here; its compiles are done.
        estimates, out_bytes = self.warm_up(s, params, retune=s in self.warmed)
        timed = [estimates[n] for n in ("submission", "reference") if n in estimates]
        slow = max(timed) if timed else 1e-3
        fast = min(estimates.values()) if estimates else slow
        per_sample = 1
        if self.cuda:
            per_sample = choose_per_sample(
                fast,
                target=self.config.sample_target,
                max_k=self.config.max_per_sample,
                set_bytes=set_bytes,
                set_budget=set_budget,
            )
        samples = math.ceil(self.config.request_seconds / max(per_sample * slow, 1e-7))
        samples = min(self.config.max_calls, max(self.config.min_calls, samples))
        if per_sample > 1:
            # Such a sample averages K calls already, and costs K fills and a hold of about K launches.
            samples = min(samples, self.config.max_batched_samples)
        if out_bytes:
            samples = max(3, min(samples, keep_budget // (out_bytes * per_sample)))
        if per_sample > 1:
            sets = per_sample
        else:
            sets = 2 if not l2 else min(8, max(2, math.ceil(2 * l2 / set_bytes)))
            sets = max(1, min(sets, set_budget // set_bytes))
        if not self.cuda:
            samples = min(samples, 5)
        plan = {
            "specs": specs,
            "mode": "events" if self.cuda else "cpu",
            "set_bytes": set_bytes,
            "flush_bytes": 2 * l2,
            "per_sample": int(per_sample),
            "calls": int(samples),
            "sets": int(sets),
            "estimates": estimates,
            "graph": {},
        }
        if self.cuda and per_sample > 1 and self.config.graphs:
            self.graph_probe(s, params, plan)
        return plan

    def graph_probe(self, s: int, params: dict, plan: dict) -> None:
        """Can each contender's K calls be captured into a CUDA graph? Sets plan["graph"] and plan["mode"].

        A launch-bound call (K > 1) is timed by replaying a graph of the
        sample's calls: launched from a stream, the GPU's gap between
        back-to-back kernels differs by several percent between identical
        processes, replayed from a graph by under one (docs/measurements: clock calibration).
        The submission and the reference are timed the same way: if either
        cannot be captured, both are timed from the stream (a note says why).
        The PyTorch baseline goes its own way (it earns no points).
        """
        verdicts = {}
        for c in list(self.workers.contenders):
            msg = {
                "type": "bench",
                "id": f"{s}-graph",
                "shape": s,
                "args": plan["specs"],
                "samples": 1,
                "per_sample": plan["per_sample"],
                "seed": secrets.randbits(62),
                "sets": plan["sets"],
                "flush_bytes": plan["flush_bytes"],
                "keep": False,
                "prepare": c.name == "pytorch",
                "graph": True,
                "trace": self.workers.replayer is not None and c.name != "pytorch",
            }  # as timed: recorded
            try:
                reply, _ = request(c, msg)
            except BaselineLost as lost:
                self.workers.drop_baseline(lost, self.notes)
                continue
            if c.name == "submission":
                rule_checks(self.file, reply, params, warmup=False)
            verdicts[c.name] = reply.mode == "graph"
            if not verdicts[c.name] and reply.note and c.name != "pytorch":
                self.notes.add(f"{c.name} at {shape_label(params)}: {reply.note}")
        plan["graph"] = graph_plan(verdicts)
        if plan["graph"].get("submission"):
            plan["mode"] = "graph"


def graph_plan(captured: dict) -> dict:
    """Who replays a CUDA graph at a shape, from who could be captured: the submission and the reference
    together or neither (they are timed the same way), the PyTorch baseline on its own."""
    both = bool(captured.get("submission")) and bool(captured.get("reference"))
    return {name: (bool(ok) if name == "pytorch" else both) for name, ok in captured.items()}


def choose_per_sample(
    fastest: float,
    *,
    target: float = SAMPLE_TARGET,
    max_k: int = MAX_PER_SAMPLE,
    set_bytes: int = 1,
    set_budget: int = gpu_budget.TIMED_SETS_BYTES,
) -> int:
    """K, the calls per timed sample: enough for ``target`` seconds of GPU work at the fastest contender's
    time per call (1 when a call is that long already), at most ``max_k`` and as many input sets as fit."""
    if not fastest > 0 or fastest >= target:
        return 1
    k = math.ceil(target / fastest - 1e-9)
    return int(max(1, min(k, max_k, set_budget // max(1, set_bytes))))
