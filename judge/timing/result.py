"""The speed run's result: per shape the times, the speedups with their intervals, the roofline and the two
clocks held against each other; the geometric mean, the kernels and the notes. The report's ``speed`` section.

The profiler clock (the GPU's own records of the kernels) is held against the events here
(checks.compare_clocks), with the trusted reference vouching for it, and a median below the GPU's physical
floor is RJ.
"""

from __future__ import annotations

import math

from judge.timing import checks, stats
from judge.timing.contenders import Contender
from judge.timing.findings import BenchFailed, shape_label
from judge.verdicts import Verdict

CLOCK = (
    "CUDA events around samples of K calls queued behind a spin kernel before the clock starts "
    "(a sample the GPU started before the host had queued it all is redone with a longer hold), "
    "less the median of the empty sequence, over K; a sample of K > 1 calls is one CUDA graph of them, "
    "replayed; beside it the CUDA profiler's kernel records"
)
NOT_A_CLAIM = (
    "interpreter mode: times are time.perf_counter around the interpreter on the CPU, "
    "a test of the protocol, not a speed claim"
)


def speed_section(
    problem,
    config,
    score,
    measured,
    contenders: list,
    notes,
    *,
    cuda: bool,
    ceilings: dict,
    plans,
    rounds,
    torch_times,
    stopped,
    checked,
    phases,
) -> dict:
    """The report's speed section from what the run measured (``measured``: its clock bookkeeping, profiler
    summaries and host gaps, judge.timing.measure.Measure) and checked. What the clocks contradict, or a time
    below what the GPU can do (``ceilings``), is RJ here."""
    intervals, gm = stats.speedups(rounds, score.clamp)
    shapes = []
    sub = next(c for c in contenders if c.name == "submission")
    ref = next(c for c in contenders if c.name == "reference")
    for s, plan in enumerate(plans):
        params = config.shapes[s]
        label = shape_label(params)
        sub_all = [t for r in rounds for t in r[s][1]]
        ref_all = [t for r in rounds for t in r[s][0]]
        t_sub, t_ref = stats.median(sub_all), stats.median(ref_all)
        work = tuple(problem.golden.work(dict(params)))
        row = {
            "params": params,
            "mode": plan["mode"],
            "calls_per_sample": plan["per_sample"],
            "flush": bool(plan["flush_bytes"]),
            "samples_per_round": plan["calls"],
            "calls_per_round": plan["calls"] * plan["per_sample"],
            "time_s": t_sub,
            "reference_time_s": t_ref,
            **intervals[s].as_dict(),
            "bytes": work[0],
            "flops": work[1],
        }
        times = {"submission": t_sub, "reference": t_ref}
        if torch_times[s]:
            t_torch = stats.median([t for r in torch_times[s] for t in r])
            times["pytorch"] = t_torch
            row["pytorch_time_s"] = t_torch
            row["vs_pytorch"] = t_torch / t_sub
            row["reference_vs_pytorch"] = t_torch / t_ref
            if cuda:
                row["pytorch_mode"] = "graph" if plan["graph"].get("pytorch") else "events"
        row["gbps"] = work[0] / t_sub / 1e9 if work[0] else None
        row["tflops"] = work[1] / t_sub / 1e12 if work[1] else None
        clock = {}
        # The trusted reference vouches for the profiler clock at this shape: where even its events fall
        # far below its profiler span, the profiler clock is off here and judges nobody.
        ref_prof = (measured.profiles.get(("reference", s)) or {}).get("time_s")
        trusted_clock = not checks.compare_clocks(t_ref, ref_prof).forged
        for name, t_event in sorted(times.items(), key=lambda kv: kv[0] != "reference"):
            prefix = "" if name == "submission" else f"{name}_"
            prof = measured.profiles.get((name, s)) or {}
            t_prof = prof.get("time_s")
            row[f"{prefix}profiler_time_s"] = t_prof
            book = dict(measured.clock.get((name, s)) or {})
            over = book.pop("overhead", [])
            book["overhead_s"] = stats.median(over) if over else None
            book["profiler"] = prof or None
            clock[name] = book
            agree = checks.compare_clocks(t_event, t_prof)
            if agree.forged and name == "submission" and trusted_clock:
                raise BenchFailed(
                    Verdict.RJ,
                    f"at bench shape {label} {agree.message}: a forged timer",
                    {"shape": params, "time_s": t_event, "profiler_time_s": t_prof},
                )
            if name == "submission" and ("submission", s) in measured.host_gaps:
                _host_gap(
                    measured.host_gaps, notes, s, label, params, t_event, agree, t_prof if trusted_clock else None
                )
            if agree.disagree:
                notes.add(
                    f"{name} at {label}: {agree.message}"
                    + ("" if trusted_clock else " (the reference's too: not used to judge)")
                )
        row["clock"] = clock
        if cuda:
            from judge.timing.ceilings import matmul_rate

            floor = checks.floor_time(
                work, ceilings["copy_bytes_per_s"], matmul_rate(ceilings, params.get("dtype", "float32"))
            )
            row["floor_s"] = floor.seconds
            row["bound"] = floor.bound
            row["roofline_pct"] = 100 * floor.seconds / t_sub if floor.seconds else None
            row["reference_roofline_pct"] = 100 * floor.seconds / t_ref if floor.seconds else None
            if floor.seconds and checks.below_floor(t_sub, floor, config.floor_margin):
                raise BenchFailed(
                    Verdict.RJ,
                    f"at bench shape {label} the median time "
                    f"{t_sub * 1e6:.2f} us is below what this GPU can do "
                    f"({floor.seconds * 1e6:.2f} us: {floor.bound}-bound); the work was "
                    "skipped or the timing forged",
                    {"shape": params},
                )
        row["checked_calls"] = checked[s]["calls"]
        shapes.append(row)
    kernel_list = own_kernels(sub)
    spills = [k for k in kernel_list if k.get("spills")]
    notes = list(notes)
    if spills:
        notes.append(
            "register spills: "
            + ", ".join(f"{k['name']} ({k['spills']} spilled)" for k in spills)
            + " - spilled registers live in local memory, the most common hidden slowdown"
        )
    if not cuda:
        notes.insert(0, NOT_A_CLAIM)
    half = gm.half_width
    if stopped != "ci":
        notes.append(
            f"stopped by the {'round limit' if stopped == 'rounds' else 'time budget'} with the "
            f"geometric mean's interval at +-{100 * (math.exp(half) - 1):.2f}% "
            f"(target +-{100 * config.stop.ci_target:.1f}%)"
        )
    return {
        "measured": True,
        "geomean_speedup": gm.value,
        "ci": [gm.low, gm.high],
        "ci_half_width_log": half,
        "rounds": len(rounds),
        "stopped": stopped,
        "shapes": shapes,
        "kernels": kernel_list,
        "ceilings": {k: v for k, v in ceilings.items() if k != "version"} if cuda else None,
        "rule": score.describe(),
        "notes": notes,
        "phases": phases,
        "timing_mode": "cuda" if cuda else "cpu (not a speed claim)",
        "clock": CLOCK if cuda else NOT_A_CLAIM,
        "reference": str(problem.reference_path.name),
        "reference_kernels": own_kernels(ref),
    }


def _host_gap(
    host_gaps: dict, notes, s: int, label: str, params: dict, t_event: float, agree, t_prof: float | None
) -> None:
    """A timed request of the submission's whose host clock ran far ahead of its CUDA events (checks.host_gap).

    A busy host (every core taken: a batch judging beside the speed run) does that to every worker, and
    the GPU's own records still agree with the events. So it is excused only when both hold: the trusted
    reference's requests at the same shape ran as far ahead of their events, and the submission's
    profiler figure agrees with its events (within compare_clocks' tolerance, not merely "not forged":
    a profiler figure below the events is the submission's to make). Else it stays what it was: RJ.
    """
    gap = host_gaps[("submission", s)]
    busy = ("reference", s) in host_gaps
    if t_prof is None or not busy or agree.disagree:
        raise BenchFailed(Verdict.RJ, f"the timing does not add up: {gap}", {"clock": [gap], "shape": params})
    notes.add(
        f"at {label} the host's clock ran ahead of the CUDA events, the reference's too "
        f"({gap.split(' (')[0]}); the profiler's kernel records ({t_prof * 1e6:.1f} us per call) "
        f"agree with the events ({t_event * 1e6:.1f} us): a busy host, not a forged timer"
    )


def own_kernels(c: Contender) -> list[dict]:
    """The distinct compiled kernels of a worker's own file launched in its last requests."""
    seen = {}
    for reply, _ in c.last.values():
        for info in reply.kernels:
            if info.own:
                seen[info] = info.as_dict()
    return list(seen.values())
