#!/usr/bin/env python3
"""Speed of the references on the GPU, and the stability of the timing protocol.

1. For each problem, `python -m judge bench ID reference/... --json` with the
   reference as the submission: per bench shape the reference's time, GB/s
   or TFLOP/s, % of the measured roofline and its speed against PyTorch
   (torch.softmax, F.rms_norm, cuBLAS, SDPA ...).
2. Stability: the same submission (the reference itself) benchmarked N times
   in a row; the spread of the geometric-mean speedup (max - min over the
   median; target <= 2%, aim 1%). Each run is a full `judge bench` (fresh
   workers), as a student would see it.
3. Optionally the judge's latency per problem (tests/bench/judge_latency.py).

A dated markdown section (device, driver, torch/triton versions) goes to
OUT/SPEED.md (and is appended to --markdown when given); raw JSON goes to --out.
What holds of it belongs on the docs' measurements page (docs/measurements/).

    python tests/bench/speed.py [--problems 93 94 ...] [--stability 94 95] [--runs 5] [--budget 10]
                                [--latency 94 98] [--out DIR] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def bench(pid: str, budget: float, out: Path, tag: str, extra=()) -> dict:
    from judge.problems import find_problem

    p = find_problem(pid)
    cmd = [
        sys.executable,
        "-m",
        "judge",
        "bench",
        str(p.id),
        str(p.reference_path),
        "--json",
        "--device",
        "cuda",
        "--sandbox",
        "process",
        "--speed-budget",
        str(budget),
        *extra,
    ]
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    wall = time.monotonic() - t0
    (out / f"bench-{p.id}-{tag}.stderr.txt").write_text(r.stderr)
    try:
        report = json.loads(r.stdout)
    except json.JSONDecodeError:
        report = {"verdict": f"exit {r.returncode}", "message": (r.stderr.strip().splitlines() or ["?"])[-1]}
    report["wall_seconds"] = wall
    (out / f"bench-{p.id}-{tag}.json").write_text(json.dumps(report, indent=1))
    return report


def shape_text(params: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items())


def num(v, fmt="{:.1f}") -> str:
    return "-" if v is None else fmt.format(v)


def references_table(reports: dict) -> str:
    lines = [
        "| problem | shape | mode | reference time | GB/s | TFLOP/s | % roofline | ref vs PyTorch | PyTorch time |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for pid, rep in reports.items():
        speed = rep.get("speed") or {}
        if not speed.get("shapes"):
            lines.append(f"| {pid} | {rep.get('verdict')}: {str(rep.get('message', ''))[:120]} | | | | | | | |")
            continue
        for row in speed["shapes"]:
            t = row["reference_time_s"]
            w = row
            gbps = w["bytes"] / t / 1e9 if w.get("bytes") else None
            tflops = w["flops"] / t / 1e12 if w.get("flops") else None
            lines.append(
                f"| {pid} | {shape_text(row['params'])} | {row['mode']} | {t * 1e6:.1f} us | {num(gbps, '{:,.0f}')}"
                f" | {num(tflops)} | {num(row.get('reference_roofline_pct'))}% | "
                f"{num(row.get('reference_vs_pytorch'), '{:.3f}x')} | "
                f"{num(row.get('pytorch_time_s') and row['pytorch_time_s'] * 1e6)} us |"
            )
    return "\n".join(lines)


def stability_table(runs: dict) -> str:
    lines = [
        "| problem | runs | geomean speedups (reference vs itself) | spread (max-min)/median | rounds | stopped |",
        "|---|---|---|---|---|---|",
    ]
    for pid, reps in runs.items():
        vals = [r["speed"]["geomean_speedup"] for r in reps if (r.get("speed") or {}).get("geomean_speedup")]
        if not vals:
            lines.append(f"| {pid} | 0 | {reps[0].get('verdict') if reps else '-'} | - | - | - |")
            continue
        vals_sorted = sorted(vals)
        med = vals_sorted[len(vals) // 2]
        spread = (max(vals) - min(vals)) / med
        rounds = ", ".join(str(r["speed"]["rounds"]) for r in reps if r.get("speed"))
        stopped = ", ".join(str(r["speed"].get("stopped")) for r in reps if r.get("speed"))
        lines.append(
            f"| {pid} | {len(vals)} | {', '.join(f'{v:.4f}' for v in vals)} | {100 * spread:.2f}% | "
            f"{rounds} | {stopped} |"
        )
    return "\n".join(lines)


def header() -> str:
    import torch
    import triton

    from judge.timing import ceilings

    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    name = torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU"
    text = (
        f"\n## {stamp}: {name}\n\ndriver {ceilings.driver_version()}, torch {torch.__version__}, "
        f"triton {triton.__version__}, Python {sys.version.split()[0]}\n"
    )
    if torch.cuda.is_available():
        c = ceilings.get(0)
        rates = ", ".join(f"{k} {v / 1e12:.0f}" for k, v in c["matmul_flops_per_s"].items())
        text += (
            f"\nMeasured ceilings: copy {c['copy_bytes_per_s'] / 1e9:,.0f} GB/s (read + write), "
            f"matmul TFLOP/s {rates}; L2 {c['l2_bytes'] >> 20} MiB.\n"
        )
    return text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", nargs="*", default=["93", "94", "95", "96", "97", "98"])
    ap.add_argument("--stability", nargs="*", default=["94", "95"])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--budget", type=float, default=10.0, help="seconds of timed rounds per bench")
    ap.add_argument("--stability-budget", type=float, default=6.0)
    ap.add_argument("--latency", nargs="*", default=[], help="also time `submit` of these problems")
    ap.add_argument("--deadline", type=float, default=0, help="skip what would start after this many seconds")
    ap.add_argument("--out", type=Path, default=Path("gpu-out"))
    ap.add_argument("--markdown", type=Path, default=None, help="also append the tables to this file")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    t_start = time.monotonic()

    def late(what: str) -> bool:
        if args.deadline and time.monotonic() - t_start > args.deadline:
            print(f"skipped (past the deadline): {what}", flush=True)
            return True
        return False

    text = header()
    print(text, flush=True)
    progress = args.out / "SPEED.md"

    def save(so_far: str) -> None:
        progress.write_text(so_far)  # after every section: a deadline kill keeps what was measured

    reports = {}
    for pid in args.problems:
        if late(f"references {pid}"):
            break
        try:
            reports[pid] = bench(pid, args.budget, args.out, "reference")
            sp = reports[pid].get("speed") or {}
            print(
                f"{pid}: {reports[pid].get('verdict')} {reports[pid].get('message')} "
                f"({reports[pid]['wall_seconds']:.0f} s, {sp.get('rounds')} rounds)",
                flush=True,
            )
        except Exception:  # noqa: BLE001 - one problem's failure must not stop the rest
            traceback.print_exc()
    text += "\n### References vs PyTorch and the roofline\n\n" + references_table(reports) + "\n"
    save(text)
    runs = {}
    for pid in args.stability:
        runs[pid] = []
        for i in range(args.runs):
            if late(f"stability {pid} run {i}"):
                break
            try:
                rep = bench(pid, args.stability_budget, args.out, f"stability{i}")
                runs[pid].append(rep)
                print(f"stability {pid} run {i}: {rep.get('verdict')} {rep.get('message')}", flush=True)
            except Exception:  # noqa: BLE001
                traceback.print_exc()
    if runs:
        text += (
            f"\n### Stability: the reference benchmarked against itself {args.runs} times "
            f"(budget {args.stability_budget:g} s of rounds each)\n\n" + stability_table(runs) + "\n"
        )
        save(text)
    if args.latency and not late("latency"):
        cmd = [
            sys.executable,
            str(ROOT / "tests" / "bench" / "judge_latency.py"),
            *args.latency,
            "--device",
            "cuda",
            "--markdown",
            str(args.out / "latency.md"),
        ]
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        print(r.stdout[-4000:], r.stderr[-2000:], flush=True)
        if (args.out / "latency.md").exists():
            text += "\n### Judge latency on this GPU\n" + (args.out / "latency.md").read_text()
    save(text)
    if args.markdown is not None and args.markdown.resolve() != progress.resolve():
        with args.markdown.open("a") as f:
            f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
