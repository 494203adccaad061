#!/usr/bin/env python3
"""What a roster's job timelines say about the GPU lock (JUDGE_TIMELINE=FOLDER for `judge grade`: one file a job).

    python tests/bench/roster_timelines.py FOLDER

Three tables, from every ``timeline-*.json`` in FOLDER:

- the speed runs that timed (the accepted files): each phase that holds the GPU to itself (the warm-up, the
  timed rounds, the profiler clock, the trim), and the wait for the lock, as medians and sums. While one of
  them holds the GPU, or waits for it, no case of any job starts (judge.timing.lock);
- the speed runs that never timed (a file whose tests failed after its first group passed): from their first
  speed-run span to their last, and the seconds of their starts, warm-ups and checks ahead, which went to
  nothing;
- every span name over all jobs, summed (the first 30), to see where the roster's time went.

Timestamps in a file count from its own process's start (a grading job's process is started ahead of its job),
so nothing here lines up one job against another.
"""

from __future__ import annotations

import glob
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

EXCLUSIVE = ("speed run: warm-up", "speed run: timed rounds", "speed run: profiler clock", "speed run: trim")
LOCK_WAIT = "speed run: wait for the GPU lock"
AHEAD = ("speed run: start the workers (ahead)", "speed run: warm-up ahead", "speed run: check ahead")


def load(path: str) -> list[dict]:
    with open(path) as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


def seconds(events: list[dict], name: str, prefix: bool = False) -> float:
    return sum(e["dur"] for e in events if (e["name"].startswith(name) if prefix else e["name"] == name)) / 1e6


def main(folder: str) -> None:
    files = sorted(glob.glob(str(Path(folder) / "timeline-*.json")))
    if not files:
        raise SystemExit(f"no timeline-*.json in {folder}")
    timed, untimed, names = defaultdict(list), [], defaultdict(float)
    for f in files:
        events = load(f)
        for e in events:
            name = e["name"].split(" (")[0] if e["name"].startswith(("case (", "replay (")) else e["name"]
            names[name] += e["dur"] / 1e6
        if any(e["name"] == "speed run: timed rounds" for e in events):
            for name in EXCLUSIVE + (LOCK_WAIT,):
                timed[name].append(seconds(events, name))
            timed["held, all phases"].append(sum(seconds(events, n) for n in EXCLUSIVE))
            continue
        speed = [e for e in events if e["name"].startswith("speed run")]
        if speed:
            span = (max(e["ts"] + e["dur"] for e in speed) - min(e["ts"] for e in speed)) / 1e6
            untimed.append((Path(f).name, span, sum(seconds(events, n, prefix=True) for n in AHEAD)))
    print(f"{len(files)} job timelines in {folder}\n")
    n = len(timed.get("held, all phases", []))
    print(f"speed runs that timed: {n}\n\n| phase | median s | sum s |\n|---|---|---|")
    for name, vals in timed.items():
        print(f"| {name} | {statistics.median(vals):.2f} | {sum(vals):.1f} |")
    print(f"\nspeed runs spawned ahead that never timed: {len(untimed)}\n\n| job | first to last span s | "
          "starts, warm-ups, checks ahead s |\n|---|---|---|")
    for name, span, work in sorted(untimed):
        print(f"| {name} | {span:.1f} | {work:.1f} |")
    print("\n| span | seconds over all jobs |\n|---|---|")
    for name, total in sorted(names.items(), key=lambda kv: -kv[1])[:30]:
        print(f"| {name} | {total:.1f} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__.split("\n\n")[1])
    main(sys.argv[1])
