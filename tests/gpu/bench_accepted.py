#!/usr/bin/env python3
"""The speed run's replay check over every accepted file of every corpus, on a GPU (issue 12).

`judge selftest` judges verdicts without speed (a speed run per file would queue
every job on the GPU lock), so the replay of the checked timed calls
(judge.timing.verify `Verifier.check` -> judge.replay) is not in it. This runs
`python -m judge bench ID FILE --json --no-pytorch` for each accepted file,
with a short timing budget (the clock is not the point here: the verdict
is), and prints one line per file: the verdict (AC expected: a false RJ
from the replay shows here), the replays and the wall time.

Files are taken round-robin over the problems, so a deadline (--deadline
seconds) cuts every problem short rather than the last ones entirely.

    python tests/gpu/bench_accepted.py [--budget 0.3] [--sandbox process] [--deadline 500] [--out DIR]
                                       [--problems 96 97 98] [--skip N]

(--skip N leaves out the first N files of that order: the ones an earlier call with a deadline reached.)
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from judge.problems import all_problems  # noqa: E402


def files(only: list[str] | None = None) -> list[tuple[str, Path]]:
    per_problem = []
    for p in all_problems():
        if only and str(p.id) not in only:
            continue
        if not p.spec.get("bench", {}).get("shapes"):
            continue  # no speed run (an answers problem, or 99)
        # The references are timed against themselves by tests/bench/calibrate.py, which replays them too.
        mine = [(str(p.id), path) for verdict, path in p.corpus() if verdict == "AC"]
        per_problem.append(mine)
    return [x for group in itertools.zip_longest(*per_problem) for x in group if x is not None]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=0.3)
    ap.add_argument("--sandbox", default="process")
    ap.add_argument("--deadline", type=float, default=500.0)
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or "gpu-out"))
    ap.add_argument("--problems", nargs="*", default=None, help="only these problems' files (ids)")
    ap.add_argument("--skip", type=int, default=0, help="leave out the first N files (of the round-robin order)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    results = []
    bad = 0
    for pid, path in files(args.problems)[args.skip :]:
        left = args.deadline - (time.monotonic() - t0)
        if left < 30:
            print(f"--  {pid} {path.relative_to(ROOT)}: skipped ({left:.0f} s left)", flush=True)
            continue
        argv = [
            sys.executable,
            "-m",
            "judge",
            "bench",
            pid,
            str(path),
            "--json",
            "--no-pytorch",
            "--device",
            "cuda",
            "--sandbox",
            args.sandbox,
            "--speed-budget",
            str(args.budget),
            "--no-progress",
        ]
        t = time.monotonic()
        try:
            proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=left)
            report = json.loads(proc.stdout)
        except subprocess.TimeoutExpired:
            report = {"verdict": "timeout", "message": f"over {left:.0f} s"}
        except json.JSONDecodeError:
            report = {"verdict": "no-json", "message": f"exit {proc.returncode}: {proc.stderr[-400:]}"}
        seconds = time.monotonic() - t
        phases = (report.get("speed") or {}).get("phases") or {}
        ok = report.get("verdict") == "AC"
        bad += not ok
        results.append(
            {
                "problem": pid,
                "file": str(path.relative_to(ROOT)),
                "verdict": report.get("verdict"),
                "message": report.get("message"),
                "phases": phases,
                "seconds": round(seconds, 1),
                "details": report.get("details"),
            }
        )
        print(
            f"{'ok ' if ok else 'BAD'} {pid} {report.get('verdict'):<4} {seconds:5.1f}s replays={phases.get('replays')} "
            f"{path.relative_to(ROOT)}: {str(report.get('message'))[:200]}",
            flush=True,
        )
        (args.out / "bench_accepted.json").write_text(json.dumps(results, indent=1))
    print(f"{len(results)} benched, {bad} not AC, {time.monotonic() - t0:.0f} s", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
