#!/usr/bin/env python3
"""Several students' `judge submit` at once on one GPU: every verdict, every speed score, each wall time.

Each submit judges a fresh copy of a problem's reference (new bytes, so its kernels compile, as a student's newly
edited file does), started together as independent processes, as students sharing a lab box would run them. With
--alone, each copy is first judged by itself, one after another, so that the shared speed scores can be set beside
the lone ones (issue 39: within +-3%).

    python tests/bench/concurrent_submits.py 93 94 94 95 95 96 97 98 [--alone] [--device cuda]
                                             [--sandbox bwrap] [--reports DIR] [--extra FILE ...]

--extra FILE adds a submission as it is (not a reference), e.g. a device-memory bomb beside the honest files;
its verdict is reported, and it is left out of the "every honest file AC" line.
The last lines are a table: problem, file, verdict, speedup alone and shared, their ratio, the wall times.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "bench"))

from judge_latency import fresh_copy  # noqa: E402


def reference(problem: str) -> Path:
    return next((ROOT / "reference").glob(f"{int(problem):03d}-*.py"))


def command(problem: str, path: Path, args) -> list[str]:
    return [sys.executable, "-m", "judge", "submit", problem, str(path), "--json", "--device", args.device,
            "--sandbox", args.sandbox]


def summary(out: str) -> dict:
    try:
        report = json.loads(out)
    except ValueError:
        return {"verdict": "no report", "speedup": None, "message": out[-300:]}
    speed = report.get("speed") or {}
    return {"verdict": report.get("verdict"), "speedup": speed.get("speedup") or speed.get("geomean_speedup"),
            "message": report.get("message"), "report": report}


def run_together(jobs: list[tuple[str, Path]], args) -> list[dict]:
    started = time.monotonic()
    procs = [(p, f, subprocess.Popen(command(p, f, args), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)) for p, f in jobs]
    results = []
    for p, f, proc in procs:
        out, err = proc.communicate()
        results.append({"problem": p, "file": f, "wall": time.monotonic() - started, **summary(out),
                        "stderr": err[-2000:]})
    return results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("problems", nargs="+")
    ap.add_argument("--alone", action="store_true", help="judge each copy alone first, for the speed scores")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--sandbox", default="bwrap")
    ap.add_argument("--reports", type=Path, help="keep every JSON report here")
    ap.add_argument("--extra", nargs="*", default=[], help="PROBLEM:FILE submissions judged beside the copies")
    args = ap.parse_args()

    jobs = [(p, fresh_copy(reference(p))) for p in args.problems]
    extras = [(e.split(":", 1)[0], Path(e.split(":", 1)[1]).resolve()) for e in args.extra]
    alone: dict[Path, dict] = {}
    if args.alone:
        for p, f in jobs:
            t0 = time.monotonic()
            alone[f] = {**run_together([(p, f)], args)[0], "wall": time.monotonic() - t0}
            print(f"alone {p} {f.name}: {alone[f]['verdict']} speedup {alone[f]['speedup']}", flush=True)
    t0 = time.monotonic()
    shared = run_together(jobs + extras, args)
    span = time.monotonic() - t0
    if args.reports:
        args.reports.mkdir(parents=True, exist_ok=True)
        for i, r in enumerate(shared):
            (args.reports / f"shared-{i:02d}-{r['problem']}.json").write_text(json.dumps(r.get("report"), indent=1))
            if r["file"] in alone:
                (args.reports / f"alone-{i:02d}-{r['problem']}.json").write_text(
                    json.dumps(alone[r["file"]].get("report"), indent=1))
    print(f"\n{len(shared)} submits at once, the last done after {span:.1f} s")
    print(f"{'problem':>7} {'verdict':>8} {'alone x':>8} {'shared x':>8} {'ratio':>6} {'wall alone':>10} "
          f"{'wall shared':>11}  message")
    honest_ac = 0
    worst = 0.0
    for r in shared:
        a = alone.get(r["file"], {})
        ratio = (r["speedup"] / a["speedup"]) if r.get("speedup") and a.get("speedup") else None
        if ratio is not None:
            worst = max(worst, abs(ratio - 1))
        honest_ac += r["file"] not in {f for _, f in extras} and r["verdict"] == "AC"
        print(f"{r['problem']:>7} {r['verdict']:>8} {a.get('speedup') or 0:>8.3f} {r.get('speedup') or 0:>8.3f} "
              f"{ratio if ratio is not None else float('nan'):>6.3f} {a.get('wall', 0):>10.1f} {r['wall']:>11.1f}  "
              f"{(r.get('message') or '')[:120]}")
    print(f"honest files AC: {honest_ac} of {len(jobs)}; largest speed-score change shared/alone: {worst:.1%}")
    return 0 if honest_ac == len(jobs) else 1


if __name__ == "__main__":
    sys.exit(main())
