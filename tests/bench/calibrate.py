#!/usr/bin/env python3
"""Calibration of the judge's speed clock against independent clocks, on a GPU.

For every bench shape of the chosen problems (problem.toml [bench] shapes):

* the judge's speed run with the reference as the submission (in-process,
  judge.timing.command.bench, ``--sandbox process``): the judge's time for the
  reference, for the same file as the submission, and for PyTorch; the CUDA
  profiler clock of each; the reference against itself (per shape and the
  geometric mean; the target is 1.00 +- 0.03 per shape, +- 0.02 overall);
* the 2x-work control: a generated submission (the reference's source and an
  entry point that calls the reference's entry twice and returns the second
  result; its kernels are its own file's, so provenance passes), timed by the
  judge against the reference: the target is 0.50 +- 0.03;
* in this process, independent of the judge: ``triton.testing.do_bench``
  (median) of the reference and of PyTorch, and a CUDA-graph clock: a graph of
  K x [L2 flush, call] minus a graph of K x [L2 flush], over K (the judge's
  time should be within 5% or 1.5 us of it);
* with ``--repeat N``: N speed runs of one reference against itself (the
  spread of their geometric means: target <= 2%);
* with ``--old-root DIR``: the old judge (a checkout of e17612a in DIR),
  ``python -m judge bench ID reference/FILE --json --no-pytorch --sandbox
  process``, beside it.

Writes OUT/calibrate.json (everything, saved after every step; OUT is --out,
else $OUT, else ./calibrate-out) and prints markdown tables to stdout;
progress goes to stderr. A deadline (--deadline seconds) skips what would
start too late, so the whole command stays inside one device call.

    python tests/bench/calibrate.py [--problems 93 94 ...] [--budget 4] [--repeat 5 --repeat-problem 94]
                                    [--old-root DIR] [--deadline 530] [--out DIR]
    python tests/bench/calibrate.py --device cpu --problems 93 --budget 1   # the plumbing, in the interpreter
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

ALL = ["93", "94", "95", "96", "97", "98"]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def median(xs):
    s = sorted(xs)
    n = len(s)
    return None if not n else (s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2]))


def shape_key(params: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items())


# ---------------------------------------------------------------------- the judge, in-process


def judge_bench(problem, path: Path, device: str, budget: float, pytorch: bool) -> dict:
    from judge.options import Options
    from judge.timing.command import bench

    options = Options(
        device=device,
        interpret=device == "cpu",
        sandbox="process",
        gpu=0 if device == "cuda" else None,
        bench={"budget_seconds": budget, "torch_baseline": pytorch},
        log=log,
    )
    t0 = time.monotonic()
    report = bench(problem, path, options)
    report["wall_seconds"] = round(time.monotonic() - t0, 2)
    return report


def control_source(problem) -> str:
    """The reference's source plus an entry point doing the reference's work twice per call.

    The first pass runs on a copy of the inputs, so that both passes read their
    inputs from memory: run twice on the same inputs, the second pass of an
    L2-resident shape would read them from the L2 and cost less than the first.
    The first pass's outputs are kept (as many as the copies): freed, the second pass
    would write its outputs into the same memory, still in the L2 (on the H200
    the 16 MB RMSNorm measured 0.545 instead of 0.50), while the judge keeps
    every timed call's outputs.
    The copies are made at the untimed warm-up call, as many as the judge's
    samples may hold calls (64) up to 256 MB, and taken in turn: a sample of K
    calls after one L2 flush finds every copy it uses cold.
    """
    entry = problem.entry_point
    return (
        problem.reference_path.read_text() + "\n\n"
        "# The 2x-work control of tests/bench/calibrate.py: the reference's work twice per call.\n"
        f"_calibrate_once = {entry}\n"
        "_calibrate_twins = {}\n"
        "_calibrate_turn = [0]\n"
        "_calibrate_kept = []\n\n\n"
        f"def {entry}(*args):\n"
        "    key = tuple((tuple(a.shape), tuple(a.stride()), a.dtype) if isinstance(a, torch.Tensor) else a\n"
        "                for a in args)\n"
        "    if key not in _calibrate_twins:\n"
        "        size = sum(a.numel() * a.element_size() for a in args if isinstance(a, torch.Tensor))\n"
        "        count = max(1, min(64, (256 << 20) // max(size, 1)))\n"
        "        _calibrate_twins[key] = [[a.clone() if isinstance(a, torch.Tensor) else a for a in args]\n"
        "                                 for _ in range(count)]\n"
        "    twins = _calibrate_twins[key]\n"
        "    _calibrate_turn[0] += 1\n"
        "    _calibrate_kept.append(_calibrate_once(*twins[_calibrate_turn[0] % len(twins)]))\n"
        "    del _calibrate_kept[:-len(twins)]\n"
        "    return _calibrate_once(*args)\n"
    )


def old_judge(old_root: Path, problem, budget: float, timeout: float) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "judge",
        "bench",
        str(problem.id),
        f"reference/{problem.reference_path.name}",
        "--json",
        "--no-pytorch",
        "--sandbox",
        "process",
        "--speed-budget",
        str(budget),
    ]
    t0 = time.monotonic()
    r = subprocess.run(cmd, cwd=old_root, capture_output=True, text=True, timeout=timeout)
    try:
        report = json.loads(r.stdout)
    except json.JSONDecodeError:
        report = {"verdict": f"exit {r.returncode}", "message": (r.stderr.strip().splitlines() or ["?"])[-1][:300]}
    report["wall_seconds"] = round(time.monotonic() - t0, 2)
    return report


# ---------------------------------------------------------------------- independent clocks, in this process


_LOADED: dict = {}


def load_entry(path: Path, entry: str):
    """The entry point of a file, loaded once (new JIT functions would compile again)."""
    if (path, entry) in _LOADED:
        return _LOADED[(path, entry)]
    spec = importlib.util.spec_from_file_location(f"calibrate_{path.stem.replace('-', '_')}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _LOADED[(path, entry)] = getattr(module, entry)
    return _LOADED[(path, entry)]


def graph_clock(fn, args, flush, k: int, reps: int = 15) -> float:
    """(graph of k x [flush, call]) - (graph of k x [flush]), over k, in seconds (medians of replays)."""
    import torch

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm-up off the default stream, as torch's docs ask before capture
        for _ in range(2):
            fn(*args)
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    work, empty = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
    outs = []
    with torch.cuda.graph(work):
        for _ in range(k):
            flush.zero_()
            outs.append(fn(*args))
    with torch.cuda.graph(empty):
        for _ in range(k):
            flush.zero_()

    def once(g) -> float:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        g.replay()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) * 1e-3

    once(work), once(empty)
    w, e = [], []
    for _ in range(reps):
        w.append(once(work))
        e.append(once(empty))
    del outs, work, empty
    return (median(w) - median(e)) / k


def independent(problem, params: dict, l2_bytes: int) -> dict:
    """do_bench and the graph clock of the reference and of PyTorch at one shape (seconds; None if not measurable)."""
    import torch
    import triton.testing

    from judge.shared import bench_inputs

    golden = problem.golden
    specs = golden.bench_args(dict(params))
    out = {}
    flush = torch.empty(max(2 * l2_bytes, 1 << 20), dtype=torch.uint8, device="cuda")
    contenders = [("reference", load_entry(problem.reference_path, problem.entry_point), None)]
    if callable(getattr(golden, "pytorch", None)):
        contenders.append(("pytorch", golden.pytorch, getattr(golden, "bench_prepare", None)))
    for name, fn, prepare in contenders:
        try:
            args = bench_inputs.make(specs, 12345, "cuda")
            if prepare is not None:
                args = prepare(*args)
            t_do = triton.testing.do_bench(lambda: fn(*args), warmup=25, rep=100, return_mode="median") * 1e-3  # noqa: F821
            out[f"{name}_do_bench_s"] = t_do
        except Exception as exc:  # noqa: BLE001
            log(f"  do_bench {name} {shape_key(params)}: {type(exc).__name__}: {exc}")
            out[f"{name}_do_bench_s"] = None
            continue
        k = int(min(20, max(2, math.ceil(2e-3 / max(t_do, 1e-7)))))
        if prepare is not None:
            # autograd's backward runs on the stream of its forward, outside a capture: not captured here
            out[f"{name}_graph_s"] = None
            del args
            continue
        try:
            out[f"{name}_graph_s"] = graph_clock(fn, args, flush, k)
            out[f"{name}_graph_k"] = k
        except Exception as exc:  # noqa: BLE001 - e.g. autograd's backward is not captured
            log(f"  graph clock {name} {shape_key(params)}: {type(exc).__name__}: {str(exc)[:200]}")
            out[f"{name}_graph_s"] = None
            torch.cuda.synchronize()
        del args
        torch.cuda.empty_cache()
    del flush
    torch.cuda.empty_cache()
    return out


# ---------------------------------------------------------------------- tables


def us(x) -> str:
    return "-" if x is None else (f"{x * 1e6:,.1f}" if x < 1e-2 else f"{x * 1e3:,.2f} ms")


def x3(x) -> str:
    return "-" if x is None else f"{x:.3f}"


def mark(ok) -> str:
    return "" if ok is None else (" ✓" if ok else " ✗")


def close(judge, ref) -> bool | None:
    if judge is None or ref is None or ref <= 0:
        return None
    return abs(judge - ref) <= max(0.05 * ref, 1.5e-6)


def rows_of(report: dict | None) -> list:
    return list(((report or {}).get("speed") or {}).get("shapes") or [])


def tables(data: dict) -> str:
    out = []
    head = (
        "| problem | shape | K | judge ref | judge self-copy | judge PyTorch | profiler ref | profiler copy | "
        "profiler PyTorch | graph ref | "
        "do_bench ref | judge/graph ref | graph PyTorch | do_bench PyTorch | judge/graph PyTorch | "
        "ref vs itself | 2x control | retries (ref/copy/pt) |"
    )
    out += ["### Per shape (times per call, us)", "", head, "|" + "---|" * (head.count("|") - 1)]
    for pid, p in data["problems"].items():
        self_rows = rows_of(p.get("self"))
        ctrl = {shape_key(r["params"]): r for r in rows_of(p.get("control"))}
        ind = p.get("independent") or {}
        if not self_rows:
            out.append(
                f"| {pid} | {(p.get('self') or {}).get('verdict', 'not run')}: "
                f"{str((p.get('self') or {}).get('message', ''))[:100]} |" + " |" * 17
            )
            continue
        for r in self_rows:
            key = shape_key(r["params"])
            i = ind.get(key) or {}
            ref, copy, pt = r.get("reference_time_s"), r.get("time_s"), r.get("pytorch_time_s")
            g_ref, g_pt = i.get("reference_graph_s"), i.get("pytorch_graph_s")
            c = ctrl.get(key) or {}
            sp = r.get("speedup")
            cs = c.get("speedup")
            clock = r.get("clock") or {}
            retries = "/".join(
                str((clock.get(n) or {}).get("retries", "-")) for n in ("reference", "submission", "pytorch")
            )
            out.append(
                f"| {pid} | {key} | {r.get('calls_per_sample', 1)} | {us(ref)} | {us(copy)} | {us(pt)} | "
                f"{us(r.get('reference_profiler_time_s'))} | {us(r.get('profiler_time_s'))} | "
                f"{us(r.get('pytorch_profiler_time_s'))} | {us(g_ref)} | {us(i.get('reference_do_bench_s'))} | "
                f"{x3(ref / g_ref if ref and g_ref else None)}{mark(close(ref, g_ref))} | {us(g_pt)} | "
                f"{us(i.get('pytorch_do_bench_s'))} | {x3(pt / g_pt if pt and g_pt else None)}{mark(close(pt, g_pt))} | "
                f"{x3(sp)}{mark(None if sp is None else abs(sp - 1) <= 0.03)} | "
                f"{x3(cs)}{mark(None if cs is None else abs(cs - 0.5) <= 0.03)} | {retries} |"
            )
    out += [
        "",
        "### Geometric means",
        "",
        "| problem | ref vs itself | 2x control | old judge: ref vs itself | rounds (self/control) "
        "| timed calls replayed (self/control) | verdicts (self/control) | wall s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for pid, p in data["problems"].items():

        def gm(rep):
            return ((rep or {}).get("speed") or {}).get("geomean_speedup")

        def rounds(rep):
            return ((rep or {}).get("speed") or {}).get("rounds", "-")

        def replays(rep):  # the speed run's replay check of the checked timed calls (judge.replay)
            return (((rep or {}).get("speed") or {}).get("phases") or {}).get("replays", "-")

        def verdict(rep):
            return (rep or {}).get("verdict", "-")

        s, c, o = gm(p.get("self")), gm(p.get("control")), gm(p.get("old"))
        wall = sum(float((p.get(k) or {}).get("wall_seconds") or 0) for k in ("self", "control", "old"))
        out.append(
            f"| {pid} | {x3(s)}{mark(None if s is None else abs(s - 1) <= 0.02)} | "
            f"{x3(c)}{mark(None if c is None else abs(c - 0.5) <= 0.03)} | {x3(o)} | "
            f"{rounds(p.get('self'))}/{rounds(p.get('control'))} | "
            f"{replays(p.get('self'))}/{replays(p.get('control'))} | "
            f"{verdict(p.get('self'))}/{verdict(p.get('control'))} | {wall:.0f} |"
        )
    if data.get("repeat"):
        rep = data["repeat"]
        vals = [v for v in rep.get("geomeans", []) if v]
        spread = (max(vals) - min(vals)) / median(vals) if vals else None
        out += [
            "",
            f"### Repeated speed runs of {rep.get('problem')} (reference against itself)",
            "",
            f"geometric means: {', '.join(f'{v:.4f}' for v in vals)}; spread (max-min)/median: "
            + ("-" if spread is None else f"{100 * spread:.2f}%{mark(spread <= 0.02)}"),
        ]
    old_rows = [(pid, p) for pid, p in data["problems"].items() if p.get("old")]
    if old_rows:
        out += [
            "",
            "### The old judge beside the new (reference timed against itself)",
            "",
            "| problem | shape | old: ref | old: self-copy | old: vs itself | new: ref | new: vs itself | graph ref |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for pid, p in old_rows:
            new = {shape_key(r["params"]): r for r in rows_of(p.get("self"))}
            ind = p.get("independent") or {}
            for r in rows_of(p.get("old")):
                key = shape_key(r["params"])
                n = new.get(key) or {}
                out.append(
                    f"| {pid} | {key} | {us(r.get('reference_time_s'))} | {us(r.get('time_s'))} | "
                    f"{x3(r.get('speedup'))} | {us(n.get('reference_time_s'))} | {x3(n.get('speedup'))} | "
                    f"{us((ind.get(key) or {}).get('reference_graph_s'))} |"
                )
    notes = []
    for pid, p in data["problems"].items():
        for k in ("self", "control"):
            for note in ((p.get(k) or {}).get("speed") or {}).get("notes") or []:
                notes.append(f"- {pid} {k}: {note}")
    if notes:
        out += ["", "### Notes of the judge's reports", ""] + notes
    return "\n".join(out)


# ---------------------------------------------------------------------- main


def environment(device: str) -> dict:
    import torch
    import triton

    env = {
        "when": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "triton": triton.__version__,
        "device": device,
    }
    if device == "cuda":
        from judge.timing import ceilings

        env["gpu"] = torch.cuda.get_device_name()
        env["driver"] = ceilings.driver_version()
        env["ceilings"] = {k: v for k, v in ceilings.get(0, log=log).items() if k != "version"}
    return env


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", nargs="*", default=ALL)
    ap.add_argument("--budget", type=float, default=4.0, help="seconds of timed rounds per judge speed run")
    ap.add_argument("--repeat", type=int, default=0, help="repeated speed runs of one reference against itself")
    ap.add_argument("--repeat-problem", default=None, help="whose reference --repeat runs (default: the first)")
    ap.add_argument("--old-root", type=Path, default=None, help="a checkout of the old judge (e17612a)")
    ap.add_argument("--no-control", action="store_true")
    ap.add_argument("--deadline", type=float, default=530.0, help="start nothing after this many seconds")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or "calibrate-out"))
    args = ap.parse_args()
    t_start = time.monotonic()
    args.out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")

    from judge.problems import find_problem

    def left() -> float:
        return args.deadline - (time.monotonic() - t_start)

    def step(what: str, need: float) -> bool:
        if left() < need:
            log(f"skipped (deadline, {left():.0f} s left): {what}")
            data["skipped"].append(what)
            return False
        log(f"[{time.monotonic() - t_start:6.1f} s] {what}")
        return True

    data = {
        "environment": environment(args.device),
        "args": {k: str(v) for k, v in vars(args).items()},
        "problems": {},
        "skipped": [],
    }
    path = args.out / "calibrate.json"

    def save() -> None:
        path.write_text(json.dumps(data, indent=1, default=str))

    save()
    cuda = args.device == "cuda"
    l2 = int(data["environment"].get("ceilings", {}).get("l2_bytes", 0)) if cuda else 0
    work = Path(tempfile.mkdtemp(prefix="calibrate-"))
    for pid in args.problems:
        problem = find_problem(pid)
        p = data["problems"].setdefault(str(problem.id), {})
        try:
            if step(f"{pid}: the reference against itself (with PyTorch)", 30):
                p["self"] = judge_bench(problem, problem.reference_path, args.device, args.budget, True)
                log(f"  {p['self'].get('verdict')} {p['self'].get('message')} ({p['self']['wall_seconds']} s)")
                save()
            if cuda and step(f"{pid}: do_bench and the graph clock", 15):
                shapes = [r["params"] for r in rows_of(p.get("self"))] or problem.spec["bench"]["shapes"]
                p["independent"] = {}
                for params in shapes:
                    p["independent"][shape_key(params)] = independent(problem, params, l2)
                save()
            if not args.no_control and step(f"{pid}: the 2x-work control", 25):
                ctrl = work / f"control-{problem.id}.py"
                ctrl.write_text(control_source(problem))
                p["control"] = judge_bench(problem, ctrl, args.device, args.budget, False)
                log(f"  {p['control'].get('verdict')} {p['control'].get('message')} ({p['control']['wall_seconds']} s)")
                save()
        except Exception:  # noqa: BLE001 - one problem's failure must not stop the rest
            p["error"] = traceback.format_exc()[-2000:]
            log(p["error"])
            save()
    if args.repeat:
        pid = args.repeat_problem or args.problems[0]
        problem = find_problem(pid)
        data["repeat"] = {"problem": str(problem.id), "geomeans": [], "walls": []}
        for i in range(args.repeat):
            if not step(f"repeat {i + 1}/{args.repeat} of {pid}", 20):
                break
            try:
                rep = judge_bench(problem, problem.reference_path, args.device, args.budget, False)
                gm = (rep.get("speed") or {}).get("geomean_speedup")
                data["repeat"]["geomeans"].append(gm)
                data["repeat"]["walls"].append(rep["wall_seconds"])
                data["repeat"].setdefault("reports", []).append(
                    {
                        "verdict": rep.get("verdict"),
                        "message": rep.get("message"),
                        "rounds": (rep.get("speed") or {}).get("rounds"),
                        "speedups": [r.get("speedup") for r in rows_of(rep)],
                    }
                )
                log(f"  {rep.get('verdict')} {rep.get('message')}")
            except Exception:  # noqa: BLE001
                log(traceback.format_exc())
            save()
    if args.old_root:
        for pid in args.problems:
            problem = find_problem(pid)
            if not step(f"{pid}: the old judge in {args.old_root}", 30):
                break
            try:
                p = data["problems"].setdefault(str(problem.id), {})
                p["old"] = old_judge(args.old_root, problem, args.budget, timeout=max(30.0, left()))
                log(f"  old: {p['old'].get('verdict')} {p['old'].get('message')} ({p['old']['wall_seconds']} s)")
            except Exception:  # noqa: BLE001
                log(traceback.format_exc())
            save()
    data["wall_seconds"] = round(time.monotonic() - t_start, 1)
    save()
    env = data["environment"]
    print(f"## Calibration of the speed clock: {env.get('gpu', env['device'])}, {env['when']}\n")
    print(
        f"torch {env['torch']}, triton {env['triton']}, Python {env['python']}, driver {env.get('driver', '-')}; "
        f"{data['wall_seconds']:.0f} s; --budget {args.budget:g} s of rounds per speed run\n"
    )
    print(tables(data))
    if data["skipped"]:
        print("\nskipped by the deadline: " + "; ".join(data["skipped"]))
    print(f"\n(raw data: {path})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
