"""What the replay check adds to `submit`: each reference judged with it off and on, interleaved.

    python tests/bench/replay_cost.py [IDS] [--runs 3] [--device cpu|cuda] [--sandbox auto] [--markdown FILE]

Each run is a fresh `python -m judge submit ID reference/ID-*.py --seed 1
--json` process (the command a student runs), once with JUDGE_REPLAY=0 and
once without, alternating which goes first; the table gives the medians of
the command's wall time and of the report's elapsed_seconds (the judging
itself, after the CLI's imports), the number of replays and the time the
judge spent on them (timing.replay_seconds, which includes any wait for the
replay worker's start), and the
overhead of the medians. Run it on a quiet machine: on a shared one the
spread between runs is as large as what is measured (the min-max columns
show it).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def one(pid: str, ref: Path, replay: bool, device: str, sandbox: str) -> dict:
    env = dict(os.environ, JUDGE_REPLAY="1" if replay else "0")
    cmd = [sys.executable, "-m", "judge", "submit", pid, str(ref), "--seed", "1", "--json", "--device", device,
           "--sandbox", sandbox]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # CPU of the judge and its workers (a docker container's processes are not our children: process backend only).
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    report = json.loads(proc.stdout)
    if os.environ.get("BENCH_REPORTS"):  # every full report kept, to read timing and the speed run's phases
        keep = Path(os.environ["BENCH_REPORTS"])
        keep.mkdir(parents=True, exist_ok=True)
        n = len(list(keep.glob(f"{pid}-*.json")))
        (keep / f"{pid}-replay-{'on' if replay else 'off'}-{n}.json").write_text(proc.stdout)
    timing = report.get("timing", {})
    return {"verdict": report["verdict"], "wall": wall, "cpu": cpu, "elapsed": report["elapsed_seconds"],
            "replays": timing.get("replays", 0), "replay_s": timing.get("replay_seconds", 0.0),
            "cases": timing.get("cases", 0)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("ids", nargs="*", default=["93", "94", "95", "96", "97", "98"])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--sandbox", default="auto")
    ap.add_argument("--markdown")
    args = ap.parse_args()
    rows = []
    for pid in args.ids:
        ref = next((ROOT / "reference").glob(f"{int(pid):03d}-*.py"))
        runs = {False: [], True: []}
        for i in range(args.runs):
            for replay in ((False, True) if i % 2 == 0 else (True, False)):
                r = one(pid, ref, replay, args.device, args.sandbox)
                runs[replay].append(r)
                print(f"{pid} replay={'on' if replay else 'off'} {r}", file=sys.stderr, flush=True)
        off, on = runs[False], runs[True]

        def med(rs, key):
            return statistics.median(r[key] for r in rs)

        def span(rs, key):
            return f"{min(r[key] for r in rs):.1f}-{max(r[key] for r in rs):.1f}"

        rows.append((f"{pid} {ref.stem.split('-', 1)[1]}", "/".join(sorted({r["verdict"] for r in off + on})),
                     med(off, "wall"), span(off, "wall"), med(on, "wall"), span(on, "wall"),
                     med(off, "elapsed"), med(on, "elapsed"), on[0]["cases"], on[0]["replays"], med(on, "replay_s"),
                     med(off, "cpu"), med(on, "cpu")))
    lines = ["| problem | verdict | wall off s | min-max | wall on s | min-max | wall + | judging off s | judging on s |"
             " judging + | CPU off s | CPU on s | CPU + | cases | replays | replay s |", "|---" * 16 + "|"]
    for name, verdict, woff, soff, won, son, eoff, eon, cases, replays, rs, coff, con in rows:
        lines.append(f"| {name} | {verdict} | {woff:.1f} | {soff} | {won:.1f} | {son} | {100 * (won / woff - 1):+.0f}% "
                     f"| {eoff:.1f} | {eon:.1f} | {100 * (eon / eoff - 1):+.0f}% | {coff:.1f} | {con:.1f} | "
                     f"{100 * (con / coff - 1):+.0f}% | {cases} | {replays} | {rs:.1f} |")
    total_off = sum(r[2] for r in rows)
    total_on = sum(r[4] for r in rows)
    lines.append(f"\nAll six together: {total_off:.1f} s off, {total_on:.1f} s on ({100 * (total_on / total_off - 1):+.0f}%).")
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
