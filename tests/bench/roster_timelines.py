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

Timestamps in a file count from its own process's start (a grading job's process is started ahead of its job).
Files written since 2026-12-05 (fifth session) also carry that start on the host's monotonic clock
(``otherData.monotonic_origin_s``) and the judge's holds of the GPU shared (spans "GPU held shared"): where
every file has both, a fourth table lines the jobs up and says, for each speed run's wait for the lock, what it
waited for last: the hold of another job's that ended last before it got the GPU, named by the span of its
thread that overlaps it most (a case, a replay, a speed run's warm-up or check ahead, a speed run's check
after its lock), or another job's speed run itself (from its wait's end to its last phase that holds the GPU
alone).
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
    return load_with_origin(path)[0]


def load_with_origin(path: str) -> tuple[list[dict], float | None]:
    """A file's spans and its zero on the host's monotonic clock (None in files written before it was kept)."""
    with open(path) as f:
        data = json.load(f)
    origin = (data.get("otherData") or {}).get("monotonic_origin_s")
    return [e for e in data["traceEvents"] if e.get("ph") == "X"], origin


HOLD = "GPU held shared"
SPEED_RUN = "another job's speed run, holding the GPU alone"


def what_the_waits_waited_for(jobs: list[tuple[str, list[dict], float]]) -> list[tuple[float, str, float]]:
    """For each speed run's wait for the lock: (its seconds, the name of the hold of another job's that ended
    last before it got the GPU, that hold's seconds). Times in seconds on the host's monotonic clock."""
    holds = []  # (start, end, job, its name: the span of the same thread that overlaps it most)
    for job, events, origin in jobs:
        spans = [(origin + e["ts"] / 1e6, origin + (e["ts"] + e["dur"]) / 1e6, e["name"], e["tid"]) for e in events]
        for a, b, name, tid in spans:
            if name != HOLD:
                continue
            # Named by the span of the same thread that overlaps it most, a group's aside (a case's span lies
            # inside its hold, a replay's around it).
            overlap = [
                (min(b, sb) - max(a, sa), n)
                for sa, sb, n, t in spans
                if t == tid and n != HOLD and not n.startswith("group ") and min(b, sb) > max(a, sa)
            ]
            label = max(overlap)[1] if overlap else "(no other span)"
            holds.append((a, b, job, label.split(" (")[0] if label.startswith(("case (", "refill (")) else label))
        # A speed run's own hold of the GPU to itself: from its wait's end to its last exclusive phase's end. A
        # wait that ends right after another job's is a wait behind that speed run, not behind a case.
        waited = [b for a, b, name, _ in spans if name == LOCK_WAIT]
        alone = [b for a, b, name, _ in spans if name in EXCLUSIVE]
        if waited and alone:
            holds.append((min(waited), max(alone), job, SPEED_RUN))
    found = []
    for job, events, origin in jobs:
        for e in events:
            if e["name"] != LOCK_WAIT or e["dur"] < 1000:
                continue
            a = origin + e["ts"] / 1e6
            b = a + e["dur"] / 1e6
            before = [h for h in holds if h[2] != job and h[0] < b and a - 1e-3 < h[1] <= b + 0.05]
            if before:
                last = max(before, key=lambda h: h[1])
                found.append((b - a, last[3], last[1] - last[0]))
            else:
                found.append((b - a, "(no hold of another job: another speed run)", 0.0))
    return found


def seconds(events: list[dict], name: str, prefix: bool = False) -> float:
    return sum(e["dur"] for e in events if (e["name"].startswith(name) if prefix else e["name"] == name)) / 1e6


def main(folder: str) -> None:
    files = sorted(glob.glob(str(Path(folder) / "timeline-*.json")))
    if not files:
        raise SystemExit(f"no timeline-*.json in {folder}")
    timed, untimed, names = defaultdict(list), [], defaultdict(float)
    lined_up = []
    for f in files:
        events, origin = load_with_origin(f)
        if origin is not None:
            lined_up.append((f, events, origin))
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
    print(
        f"\nspeed runs spawned ahead that never timed: {len(untimed)}\n\n| job | first to last span s | "
        "starts, warm-ups, checks ahead s |\n|---|---|---|"
    )
    for name, span, work in sorted(untimed):
        print(f"| {name} | {span:.1f} | {work:.1f} |")
    if lined_up and len(lined_up) == len(files) and any(e["name"] == HOLD for _, ev, _ in lined_up for e in ev):
        waits = what_the_waits_waited_for(lined_up)
        by = defaultdict(list)
        for wait, label, _ in waits:
            by[label].append(wait)
        print(
            f"\nwhat the speed runs' waits for the lock (over 1 ms) waited for last: {len(waits)}\n\n"
            "| the hold that ended last, named by its span | waits | their median s | their sum s |\n|---|---|---|---|"
        )
        for label, vals in sorted(by.items(), key=lambda kv: -sum(kv[1])):
            print(f"| {label} | {len(vals)} | {statistics.median(vals):.2f} | {sum(vals):.1f} |")
    print("\n| span | seconds over all jobs |\n|---|---|")
    for name, total in sorted(names.items(), key=lambda kv: -kv[1])[:30]:
        print(f"| {name} | {total:.1f} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__.split("\n\n")[1])
    main(sys.argv[1])
