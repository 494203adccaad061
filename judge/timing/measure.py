"""The measurements: the timed rounds, each request's clock bookkeeping, the profiler clock, and the per-call
times read from a worker's samples.

In each round every shape is timed by every contender, one after the other (reference and submission swap
places every round, so neither always runs on a warmer GPU); after each round the judge computes the speedups
and stops once the geometric mean's 95% interval is narrow enough (or a budget runs out). Then every
contender times a few samples of every shape under the CUDA profiler: the GPU's own records of the kernels, a
second clock held against the events (checks.compare_clocks, in judge.timing.result).
"""

from __future__ import annotations

import dataclasses
import secrets
import time

from judge.replies import records
from judge.timing import checks, stats
from judge.timing.contenders import Contender, request
from judge.timing.findings import BaselineLost, BenchFailed, shape_label
from judge.timing.verify import rule_checks
from judge.verdicts import Verdict


class Measure:
    """The timed rounds and the profiler clock of one run, and what they recorded: ``clock``, (contender,
    shape) -> the clock's bookkeeping (:meth:`clock_notes`); ``holds``, shape -> the longest hold any contender
    needed (every contender's minimum); ``profiles``, (contender, shape) -> the profiler clock's summary;
    ``host_gaps``, (contender, shape) -> its first "host clock far ahead of the events". ``phase`` tells the
    progress what is being timed."""

    def __init__(self, config, workers, notes, *, file: str, phase):
        self.config = config
        self.workers = workers
        self.notes = notes
        self.file = file
        self.phase = phase
        self.clock: dict = {}
        self.holds: dict = {}
        self.profiles: dict = {}
        self.host_gaps: dict = {}

    def rounds(self, plans: list, clamp, since: float) -> tuple[list, dict, str]:
        """Time rounds of every shape by every contender until the stop rule says so (``since``: when the
        warm-up ended, for its time budget). (The rounds, the baseline's times per shape, why it stopped.)"""
        n = len(self.config.shapes)
        rounds, torch_times, last_round = [], {s: [] for s in range(len(plans))}, 0.0
        stopped = None
        while stopped is None:
            r0 = time.monotonic()
            contenders = self.workers.contenders
            order = contenders if len(rounds) % 2 == 0 else swap_first_two(contenders)
            this = {}
            for s, plan in enumerate(plans):
                self.phase(f"timing: shape {s + 1} of {n}, round {len(rounds) + 1}")
                got = {}
                for c in order:
                    try:
                        got[c.name], _ = self.time(c, s, plan)
                    except BaselineLost as lost:
                        self.workers.drop_baseline(lost, self.notes)
                this[s] = (got["reference"], got["submission"])
                if "pytorch" in got:
                    torch_times[s].append(got["pytorch"])
            rounds.append(this)
            last_round = time.monotonic() - r0
            _, gm = stats.speedups(rounds, clamp)
            stopped = self.config.stop.decide(len(rounds), gm.half_width, time.monotonic() - since, last_round)
        return rounds, torch_times, stopped

    def time(self, c: Contender, s: int, plan: dict) -> tuple[list[float], dict]:
        # Every contender keeps its outputs until the next request, not only the
        # submission (whose outputs the judge may check): a worker that frees them
        # writes each sample's outputs into the memory of the last one, which alone
        # moves a microsecond call by several percent (docs/measurements: clock calibration).
        seed = secrets.randbits(62)
        msg = {
            "type": "bench",
            "id": f"{s}",
            "shape": s,
            "args": plan["specs"],
            "samples": plan["calls"],
            "per_sample": plan["per_sample"],
            "seed": seed,
            "sets": plan["sets"],
            "flush_bytes": plan["flush_bytes"],
            "keep": True,
            "prepare": c.name == "pytorch",
            "min_hold": self.holds.get(s, 0.0),
            "graph": plan["graph"].get(c.name, False),
            # The submission and the reference record their timed calls (the same host work around the
            # same GPU work); only the submission's checked call is replayed.
            "trace": self.workers.replayer is not None and c.name != "pytorch",
        }
        reply, wall = request(c, msg)
        times = net_times(reply)
        if not times:
            raise BenchFailed(Verdict.RJ if not c.trusted else Verdict.IE, f"the {c.name} worker returned no times")
        self.clock_notes(c, s, reply)
        if c.name != "pytorch" and reply.mode != "cpu" and reply.host:
            # The host clock far ahead of the events (checks.host_gap): for the submission a suspicion, settled
            # after timing (judge.timing.result); for the trusted reference, the sign of a busy host at this
            # shape.
            gap = checks.host_gap(stats.median(list(reply.times)), stats.median(list(reply.host)))
            if gap:
                self.host_gaps.setdefault((c.name, s), gap)
        if c.name == "submission":
            rule_checks(self.file, reply, self.config.shapes[s], warmup=False)
            raw, host = list(reply.times), list(reply.host)
            # What the judge's own clock contradicts is RJ now (the host clock's lead over the events: above).
            problems = checks.clock_problems(
                event_total=sum(raw),
                host_total=sum(host),
                worker_wall=reply.worker_wall,
                judge_wall=wall,
                event_median=None,
                host_median=None,
            )
            if problems:
                raise BenchFailed(Verdict.RJ, "the timing does not add up: " + problems[0], {"clock": problems})
        c.last[s] = (reply, seed)
        return times, reply

    def clock_notes(self, c: Contender, s: int, reply: records.BenchResult) -> None:
        """Keep the clock's bookkeeping of one request (holds, retries, invalid samples) and its notes."""
        book = self.clock.setdefault(
            (c.name, s), {"requests": 0, "samples": 0, "retries": 0, "invalid": 0, "hold_s": 0.0, "overhead": []}
        )
        book["requests"] += 1
        book["samples"] += len(reply.times)
        book["retries"] += reply.retries
        book["invalid"] += reply.invalid
        book["hold_s"] = max(book["hold_s"], reply.hold_s)
        self.holds[s] = max(self.holds.get(s, 0.0), reply.hold_s)  # every contender gets the longest
        book["overhead"] += list(reply.overhead)
        book["late"] = book.get("late", 0) + late_work_calls(reply)
        label = shape_label(self.config.shapes[s])
        if reply.note:
            self.notes.add(f"{c.name}: {reply.note}")
        if reply.invalid:
            self.notes.add(
                f"{c.name} at {label}: in some samples the GPU reached the start event before every "
                f"call was queued, even with the longest hold (GPU idle time may be counted in them)"
            )
        if late_work_calls(reply) and c.name == "submission":
            self.notes.add(
                "work on another stream was still running after the call's own stream ended (counted in its time)"
            )

    def profile(self, plans) -> None:
        """The second clock: a few samples of every shape and worker under the CUDA profiler.

        After timing and the output check, so that the profiler cannot touch
        the timed rounds. The reference goes first: if the profiler is not
        there or fails in a trusted worker, the run goes on without this clock
        (a note). Profiled calls of the submission are watched and ruled on
        like timed ones; what the profiler itself changes in a worker (seen in
        the reference's) is not held against the submission.
        """
        if self.config.profile_samples <= 0:
            return
        order = sorted(self.workers.contenders, key=lambda c: {"reference": 0, "pytorch": 1}.get(c.name, 2))
        by_profiler: set = set()
        for c in order:
            for s, plan in enumerate(plans):
                self.phase(f"profiler clock: {c.name}, shape {s + 1} of {len(plans)}")
                msg = {
                    "type": "bench",
                    "id": f"{s}-profile",
                    "shape": s,
                    "args": plan["specs"],
                    "samples": self.config.profile_samples,
                    "per_sample": plan["per_sample"],
                    "seed": secrets.randbits(62),
                    "sets": plan["sets"],
                    "flush_bytes": plan["flush_bytes"],
                    "keep": True,
                    "prepare": c.name == "pytorch",
                    "profile": True,
                    "graph": plan["graph"].get(c.name, False),
                }
                try:
                    reply, _ = request(c, msg)
                except (BenchFailed, BaselineLost) as exc:
                    self.notes.add(
                        f"profiler clock: the {c.name} worker failed under the profiler "
                        f"({str(getattr(exc, 'message', exc))[:200]}); no profiler clock for it"
                    )
                    if c.name == "reference":
                        return
                    break
                ev = reply.evidence
                if c.name == "reference":
                    by_profiler |= set(ev.tampered)
                elif c.name == "submission":
                    tampered = tuple(n for n in ev.tampered if n not in by_profiler)
                    ruled = dataclasses.replace(reply, evidence=dataclasses.replace(ev, tampered=tampered))
                    rule_checks(self.file, ruled, self.config.shapes[s], warmup=False)
                summary = profile_summary(reply)
                self.profiles[(c.name, s)] = summary
                if summary["status"] == "cpu":
                    continue  # interpreter mode: no GPU to hold a clock against
                if summary["status"] != "ok":
                    self.notes.add(
                        f"profiler clock ({c.name}): {summary['status']}"
                        + (f": {summary['note']}" if summary.get("note") else "")
                    )
                    if summary["status"] == "unavailable" and c.name == "reference":
                        return
                elif summary.get("note"):
                    self.notes.add(f"profiler clock ({c.name}): {summary['note']}")


def _late(reply: records.BenchResult) -> list[bool]:
    """Per sample: is work on another stream counted (did it run on after the calls' own stream ended)?

    Decided for the request as a whole, by the median sample: the device-wide
    end also carries the host's latency to see the sync return, and one sample
    in a few has a host hiccup (a page fault, the scheduler) far above the
    usual gap. Judged sample by sample, those hiccups count as work (a
    microsecond call's rounds then spread by a tenth: docs/measurements, clock calibration). Work a submission
    leaves behind in most of its samples moves the median; work left in a few
    cannot move the median time either.
    """
    raw, device, gaps = list(reply.times), list(reply.device_times), sorted(reply.sync_gaps)
    if reply.mode == "graph" or len(device) != len(raw) or not gaps or not raw:
        # A replayed graph holds all of its work (capture fails on a stream left unjoined): there is no
        # late work to find, only the host's latency to see the device-wide sync return.
        return [False] * len(raw)
    excess = stats.median([d - t for t, d in zip(raw, device)])
    late = excess > 2 * gaps[-1] + 20e-6 + 0.1 * stats.median(raw)
    return [late] * len(raw)


def net_times(reply: records.BenchResult) -> list[float]:
    """Per-call times: each sample's time less the median overhead of an empty timed region (never
    below half), divided by the calls it held (``per_sample``).

    Only samples that were fully queued before their start event (``valid``)
    count, unless none was. Each CUDA sample has two ends: the end event on the
    calls' own stream, and one recorded after a device-wide sync. Their gap is
    the sync's latency (measured with nothing timed: ``sync_gaps``) unless
    work on another stream was still running after the calls' stream
    finished: then that work is counted, up to the device-wide end less the
    usual gap.
    """
    k = max(1, reply.per_sample)
    raw, over, device = list(reply.times), list(reply.overhead), list(reply.device_times)
    eps = stats.median(over) if over else 0.0
    gaps = sorted(reply.sync_gaps)
    late = _late(reply)
    if any(late):
        usual = stats.median(gaps)
        raw = [d - usual if lt else t for t, d, lt in zip(raw, device, late)]
    valid = list(reply.valid) if len(reply.valid) == len(raw) else [True] * len(raw)
    use = [t for t, ok in zip(raw, valid) if ok and t > 0] or [t for t in raw if t > 0]
    return [max(t - eps, 0.5 * t) / k for t in use]


def late_work_calls(reply: records.BenchResult) -> int:
    """How many samples left work on another stream after their own stream finished (see net_times)."""
    return sum(_late(reply))


def profile_summary(reply: records.BenchResult) -> dict:
    """The profiler clock of one profiled request, per call: the median over samples of the GPU span of
    the sample's calls (first kernel's start to last kernel's end) over K; with the event clock of the
    same samples beside it."""
    prof = reply.profile or records.ProfileResult(status="unavailable", note="no profile in the reply")
    status = prof.status
    out = {"status": status, "note": prof.note or None, "method": prof.method or None}
    k = max(1, reply.per_sample)
    samples = list(prof.samples)
    if len(reply.valid) == len(samples):
        # A sample the GPU started before every call was queued has host gaps inside its span.
        samples = [x for x, ok in zip(samples, reply.valid) if ok]
        if status == "ok" and not samples:
            status = out["status"] = "unqueued"
            out["note"] = "no profiled sample was queued before the GPU reached it"
    samples = [x for x in samples if x.kernels]
    if status == "ok" and samples:
        out["time_s"] = stats.median([x.span_s for x in samples]) / k
        out["busy_s"] = stats.median([x.busy_s for x in samples]) / k
        calls = [t for x in samples for t in x.calls if t]
        out["call_span_s"] = stats.median(calls) if calls else None
        out["kernels_per_call"] = stats.median([x.kernels for x in samples]) / k
        out["samples"] = len(samples)
    events = net_times(reply) if reply.times else []
    out["event_time_s"] = stats.median(events) if events else None
    return out


def swap_first_two(contenders: list) -> list:
    """Reference and submission trade places every other round; the baseline stays last."""
    out = list(contenders)
    if len(out) >= 2:
        out[0], out[1] = out[1], out[0]
    return out
