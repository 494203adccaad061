#!/usr/bin/env python3
"""How long `submit` takes per problem, end to end, and where the time goes.

Judges each problem's reference solution with `python -m judge submit --json`
(a fresh process, as a user would run it) and prints one row per problem from
the report's "timing": worker starts, cases, time waiting for the worker
(first-call compiles included), the judge's golden and naive models, kernels
compiled (one per constexpr combination; none in the interpreter) and the
time in those launches, and the speed run. Runs on the CPU (interpreter) and
on a GPU.

    python tests/bench/judge_latency.py [IDS ...] [--device cpu|cuda] [--no-speed] [--markdown FILE]
                                        [--ab VAR --rounds N] [--trees DIR DIR --rounds N] [--warm] [--fresh]

--warm judges the first problem once before measuring, not counted: on a fresh GPU machine the first speed
run also measures the GPU's ceilings and compiles the reference's kernels into the trusted cache (once per
machine), which would fall on whichever variant goes first.

--ab VAR measures an environment variable side by side: each problem is judged with VAR=0 and with VAR=1 in turn,
N rounds, the order swapped every round. --ab VAR=A,B judges VAR=A and VAR=B instead (JUDGE_WORKERS=8,14: a count
of workers against another; the settings are in docs/staff/settings.md).

--fresh judges, each time, a copy of the reference with a comment of its own appended (a file of new bytes,
so a kernel cache of its own, empty: judge.intake.kernel_cache), as a student's newly edited file is: its
kernels compile, while what the judge keeps per machine (the reference's trusted kernels, the GPU's
ceilings) is warm after --warm. Without it the same reference file is judged each time, so from the second
submit on its kernels come from its cache.

Beside the report's own figures (its command_start_seconds, from the process start to the session, and
elapsed_seconds, the session), each row says when the report was on stdout ("report at s", from the start) and
how long the command took to exit after it ("exit after s": its workers' ends, the interpreter's teardown).

--trees A B measures two checkouts side by side the same way: each problem is judged by A's `python -m judge`
and by B's in turn (run in that folder), N rounds, the order swapped every round; the "ab" column names the
tree. Both use the same kernel and ceiling caches, so --warm (with the first tree) still matters.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

COLUMNS = (
    "problem",
    "ab",
    "verdict",
    "wall s",
    "worker starts",
    "litter starts",
    "start s",
    "cases",
    "worker s",
    "golden s",
    "compiles",
    "compile s",
    "tests s",
    "speed s",
    "speed start s",
    "command start s",
    "elapsed s",
    "report at s",
    "exit after s",
)


def fresh_copy(path: Path) -> Path:
    """A copy of ``path`` with a comment of its own appended: new bytes, so a kernel cache no submit has filled."""
    import tempfile
    import uuid

    folder = Path(tempfile.mkdtemp(prefix="latency-fresh-"))
    copy = folder / path.name
    copy.write_text(path.read_text() + f"\n# a fresh copy: {uuid.uuid4().hex}\n")
    return copy


def _run_timed(cmd: list, cwd: Path, env: dict):
    """Run ``cmd`` as subprocess.run(capture_output=True, text=True) does, and note when its stdout first held
    a whole JSON document (the report printed): (the CompletedProcess, that monotonic time or None). What
    lies between it and the exit is the command's end (its workers' ends, the interpreter's teardown)."""
    import threading

    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, env=env)
    out, err, seen = [], [], []

    def read_out():
        text = b""
        while chunk := proc.stdout.read1(1 << 16):
            text += chunk
            out.append(chunk)
            if not seen and text.rstrip().endswith(b"}"):
                try:
                    json.loads(text)
                    seen.append(time.monotonic())
                except ValueError:
                    pass

    readers = [threading.Thread(target=read_out), threading.Thread(target=lambda: err.append(proc.stderr.read()))]
    for t in readers:
        t.start()
    proc.wait()
    for t in readers:
        t.join()
    done = subprocess.CompletedProcess(
        cmd, proc.returncode, b"".join(out).decode(errors="replace"), b"".join(err).decode(errors="replace")
    )
    return done, (seen[0] if seen else None)


def measure(
    pid: str,
    device: str,
    sandbox: str,
    speed: bool,
    seed: int,
    env: dict | None = None,
    root: Path = ROOT,
    fresh: bool = False,
) -> dict:
    import os
    import shutil

    from judge.problems import find_problem

    p = find_problem(pid)
    judged = fresh_copy(p.reference_path) if fresh else p.reference_path
    cmd = [
        sys.executable,
        "-m",
        "judge",
        "submit",
        str(p.id),
        str(judged),
        "--json",
        "--seed",
        str(seed),
        "--device",
        device,
        "--sandbox",
        sandbox,
    ]
    if not speed:
        cmd.append("--no-speed")
    t0 = time.monotonic()
    r, t_report = _run_timed(cmd, root, {**os.environ, **(env or {})})
    wall = time.monotonic() - t0
    if fresh:
        shutil.rmtree(judged.parent, ignore_errors=True)
    try:
        report = json.loads(r.stdout)
    except json.JSONDecodeError:
        return {
            "problem": f"{p.id} {p.slug}",
            "verdict": f"exit {r.returncode}",
            "wall s": wall,
            "error": r.stderr.strip().splitlines()[-1:] if r.stderr.strip() else [],
        }
    if os.environ.get("BENCH_REPORTS"):  # every full report kept, to read timing and the speed run's phases
        keep = Path(os.environ["BENCH_REPORTS"])
        keep.mkdir(parents=True, exist_ok=True)
        n = len(list(keep.glob(f"{p.id}-*.json")))
        tag = "-".join(f"{k}{v}" for k, v in (env or {}).items()) or "default"
        if root != ROOT:
            tag = f"tree-{root.name}"
        (keep / f"{p.id}-{tag}-{n}.json").write_text(r.stdout)
    t = report.get("timing", {})
    phases = (report.get("speed") or {}).get("phases") or {}
    ab = " ".join(f"{k}={v}" for k, v in (env or {}).items()) or None
    if root != ROOT or env is None and os.environ.get("JUDGE_LATENCY_TREES"):
        ab = f"tree {root.name if root != ROOT else '.'}"
    return {
        "problem": f"{p.id} {p.slug}" + (" (fresh copy)" if fresh else ""),
        "ab": ab,
        "verdict": report.get("verdict"),
        "wall s": wall,
        "speed start s": phases.get("start_seconds"),
        "worker starts": t.get("worker_starts"),
        "litter starts": t.get("litter_starts"),
        "start s": t.get("worker_start_seconds"),
        "cases": t.get("cases"),
        "worker s": t.get("worker_seconds"),
        "golden s": t.get("golden_seconds"),
        "compiles": t.get("kernels_compiled"),
        "compile s": t.get("compile_seconds"),
        "tests s": t.get("tests_seconds"),
        "speed s": t.get("speed_seconds"),
        "speed": (report.get("speed") or {}).get("reason"),
        "replay settle s": t.get("replay_settle_seconds"),
        "groups s": t.get("group_seconds"),
        "elapsed s": report.get("elapsed_seconds"),
        "command start s": t.get("command_start_seconds"),
        "report at s": None if t_report is None else round(t_report - t0, 3),
        "exit after s": None if t_report is None else round(wall - (t_report - t0), 3),
        "command torch s": t.get("command_torch_seconds"),
        "phases": {k: v for k, v in phases.items() if k.endswith("_seconds") and not k.startswith("replay_")},
    }


def fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.1f}"
    return str(v)


def table(rows) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in rows:
        lines.append("| " + " | ".join(fmt(row.get(c)) for c in COLUMNS) + " |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ids", nargs="*", default=["93", "94", "95", "96", "97", "98"])
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--sandbox", default="process")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-speed", action="store_true", help="submit --no-speed (GPU only matters)")
    ap.add_argument("--markdown", type=Path, default=None, help="append the dated table to this file")
    ap.add_argument("--ab", default=None, help="an environment switch judged =0 and =1 in turn (VAR=A,B: =A and =B)")
    ap.add_argument(
        "--trees",
        nargs=2,
        type=Path,
        default=None,
        metavar="DIR",
        help="two checkouts judged in turn (each one's python -m judge, run in its folder)",
    )
    ap.add_argument("--rounds", type=int, default=1, help="rounds of the --ab or --trees pair")
    ap.add_argument("--warm", action="store_true", help="one untimed submit of the first problem first")
    ap.add_argument(
        "--fresh",
        action="store_true",
        help="judge a copy of the reference with a comment of its own each time (its kernels compile)",
    )
    args = ap.parse_args()
    if args.ab and args.trees:
        ap.error("--ab and --trees: one at a time")
    ab_values = ("0", "1")
    if args.ab and "=" in args.ab:
        args.ab, _, values = args.ab.partition("=")
        ab_values = tuple(v.strip() for v in values.split(","))
        if len(ab_values) != 2 or not all(ab_values) or not args.ab:
            ap.error(f"--ab {args.ab}={values}: expected VAR=A,B (two values)")
    trees = [t.resolve() for t in args.trees] if args.trees else [ROOT]
    if args.trees:
        import os

        os.environ["JUDGE_LATENCY_TREES"] = "1"  # the "ab" column names the tree, this one's as "."
    rows = []
    if args.warm and args.ids:
        row = measure(args.ids[0], args.device, args.sandbox, not args.no_speed, args.seed, root=trees[0])
        print(json.dumps({**row, "problem": row["problem"] + " (warm-up, not counted)"}), flush=True)
    for pid in args.ids:
        variants = [(None, ROOT)]
        for r in range(args.rounds if args.ab or args.trees else 1):
            if args.ab:
                variants = [({args.ab: v}, ROOT) for v in ab_values][:: 1 if r % 2 == 0 else -1]
            elif args.trees:
                variants = [(None, t) for t in trees][:: 1 if r % 2 == 0 else -1]
            for env, root in variants:
                row = measure(
                    pid, args.device, args.sandbox, not args.no_speed, args.seed, env, root=root, fresh=args.fresh
                )
                rows.append(row)
                print(json.dumps(row), flush=True)
    text = table(rows)
    print(text)
    if args.markdown:
        import torch
        import triton

        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
        where = torch.cuda.get_device_name() if args.device == "cuda" else "CPU (interpreter)"
        with args.markdown.open("a") as f:
            f.write(
                f"\n### {stamp}: judge latency, {where}\n\ntorch {torch.__version__}, triton {triton.__version__},"
                f" sandbox {args.sandbox}, seed {args.seed}\n\n{text}\n"
            )
    return 0 if all(r.get("verdict") == "AC" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
