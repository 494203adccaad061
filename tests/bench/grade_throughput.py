"""Batch-grading throughput: submissions per hour of `judge grade`, by executor and worker count.

A roster of N "students" is made from a problem's corpus (accepted and wrong
answers in turn, the mix a deadline brings), graded into a fresh store per
configuration, and timed end to end (the whole command: start-up, Ray's
start-up, judging, exports). Each configuration judges the same roster.

    python tests/bench/grade_throughput.py                          # CPU, interpreter: problem 93, 1 and 2 workers, local and Ray
    python tests/bench/grade_throughput.py --problem 94 -n 12
    python tests/bench/grade_throughput.py --device cuda --problem softmax --problem flash-attention-backward

On a GPU (--device cuda) the configurations are one GPU (local and Ray) and,
when there are two or more GPUs, two. Results print as a Markdown table for
tests/bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from judge.problems import find_problem  # noqa: E402


def make_roster(problem, n: int, where: Path) -> list[str]:
    corpus = problem.corpus()
    accepted = [p for v, p in corpus if v == "AC"] or [problem.reference_path]
    wrong = [p for v, p in corpus if v == "WA"]
    picks = []
    for i in range(n):
        pool = wrong if (i % 2 and wrong) else accepted
        picks.append(pool[(i // 2) % len(pool)])
    for i, path in enumerate(picks):
        d = where / f"student{i:03d}"
        d.mkdir(parents=True)
        # A comment makes every file distinct, as real submissions are.
        (d / f"{problem.id}.py").write_text(path.read_text() + f"\n# student {i}\n")
    return [p.parent.name + "/" + p.name for p in picks]


def run_config(problem, roster: Path, out: Path, *, device: str, executor: str, workers: int, sandbox: str,
               seed: int) -> dict:
    argv = [sys.executable, "-m", "judge", "grade", str(roster), "--problem", str(problem.id), "--out", str(out),
            "--executor", executor, "--sandbox", sandbox, "--seed", str(seed), "--no-progress", "--device", device]
    argv += ["--jobs", str(workers)] if device == "cpu" else ["--gpus", ",".join(str(g) for g in range(workers))]
    t = time.monotonic()
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - t
    if proc.returncode != 0:
        raise SystemExit(f"grade failed ({proc.returncode}): {proc.stderr.strip().splitlines()[-1:]}")
    summary = json.loads((out / "summary.json").read_text())
    verdicts = {}
    for p in summary["problems"]:
        for v, k in p["verdicts"].items():
            verdicts[v] = verdicts.get(v, 0) + k
    judged = summary["run"]["judged"]
    return {"executor": executor, "workers": workers, "judged": judged, "wall_s": round(wall, 1),
            "per_hour": round(judged / wall * 3600), "verdicts": verdicts}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problem", action="append", help="id or slug (repeat); default 93 on the CPU, 94 on a GPU")
    ap.add_argument("-n", type=int, default=8, help="submissions per roster")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--sandbox", default="process")
    ap.add_argument("--executors", default="local,ray")
    ap.add_argument("--workers", default=None, help="worker counts, e.g. 1,2 (default: 1,2; on a GPU 1 and 2 "
                                                   "when there are two GPUs)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    keys = args.problem or (["93"] if args.device == "cpu" else ["94"])
    if args.workers:
        counts = [int(x) for x in args.workers.split(",")]
    elif args.device == "cuda":
        import torch

        counts = [1, 2] if torch.cuda.device_count() >= 2 else [1]
    else:
        counts = [1, 2]
    executors = args.executors.split(",")
    rows = []
    for key in keys:
        problem = find_problem(key)
        if problem is None:
            raise SystemExit(f"unknown problem {key}")
        tmp = Path(tempfile.mkdtemp(prefix="grade-bench-"))
        try:
            make_roster(problem, args.n, tmp / "roster")
            for executor in executors:
                for workers in counts:
                    out = tmp / f"out-{executor}-{workers}"
                    r = run_config(problem, tmp / "roster", out, device=args.device, executor=executor,
                                   workers=workers, sandbox=args.sandbox, seed=args.seed)
                    r["problem"] = f"{problem.id} {problem.slug}"
                    rows.append(r)
                    print(json.dumps(r), file=sys.stderr, flush=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    unit = "GPU" if args.device == "cuda" else "interpreter worker"
    print(f"\n{args.device}, sandbox {args.sandbox}, {args.n} submissions per roster; "
          f"Python {platform.python_version()}\n")
    print(f"| problem | executor | {unit}s | submissions | wall | submissions/hour | verdicts |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        verdicts = ", ".join(f"{v} {k}" for v, k in sorted(r["verdicts"].items()))
        print(f"| {r['problem']} | {r['executor']} | {r['workers']} | {r['judged']} | {r['wall_s']} s | "
              f"{r['per_hour']} | {verdicts} |")


if __name__ == "__main__":
    main()
