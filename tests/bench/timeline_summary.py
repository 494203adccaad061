#!/usr/bin/env python3
"""What a judge command's timeline (JUDGE_TIMELINE=PATH, judge/timeline.py) says about its wall time.

    python tests/bench/timeline_summary.py timeline.json [more.json ...]

For each file: the judge's main thread, span by span (what the command waited for, in order); the workers'
starts (when each was handed over and how long its imports took); and each lane (a thread that runs cases on
one worker): its cases, the seconds it spent in them and what they went to (making inputs and sending them,
the golden answer, waiting for the worker's reply, of which compiling, and checking), and the seconds it sat
idle between its first case and its last. Lanes idle for long while cases were left point at the judge's own
process (the GIL, a group's end); busy lanes at the workers.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict

REPLY = "the worker's reply"


def load(path: str) -> list[dict]:
    with open(path) as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


def summarise(events: list[dict]) -> str:
    lines = []
    by_thread: dict[str, list[dict]] = defaultdict(list)
    for e in events:
        by_thread[e["args"].get("thread", str(e["tid"]))].append(e)
    end = max((e["ts"] + e.get("dur", 0) for e in events), default=0) / 1e6
    lines.append(f"last span ends at {end:.2f} s after the process started")

    main = sorted(by_thread.get("MainThread", []), key=lambda e: e["ts"])
    lines.append("main thread (top-level spans):")
    reach = -1
    for e in main:
        if e["ts"] < reach:  # nested in the one above
            continue
        reach = e["ts"] + e.get("dur", 0)
        lines.append(f"  {e['ts'] / 1e6:7.2f} s  +{e.get('dur', 0) / 1e6:6.2f} s  {e['name']}")

    starts = sorted((e for e in events if e["name"] == "worker start"), key=lambda e: e["ts"])
    if starts:
        lines.append("worker starts (handed over at; imports s, was ready and waiting s):")
        for e in starts:
            a = e["args"]
            done = (e["ts"] + e["dur"]) / 1e6
            lines.append(
                f"  at {done:6.2f} s  imports {a.get('imports_seconds')}  waited {a.get('waited_seconds')}"
                f"  pooled {a.get('pooled')}"
            )

    lanes = sorted(t for t in by_thread if t.startswith("judge-lane"))
    if lanes:
        lines.append(
            "lanes: cases, first-last s, busy s (inputs+send / golden / reply [compile; worker inputs/call/after]"
            " / check), idle s"
        )
    for t in lanes:
        evs = sorted(by_thread[t], key=lambda e: e["ts"])
        cases = [e for e in evs if e["name"].startswith(("case (", "refill ("))]
        if not cases:
            continue
        part = defaultdict(float)
        for e in evs:
            part[e["name"]] += e.get("dur", 0) / 1e6
        first, last = cases[0]["ts"] / 1e6, max(e["ts"] + e["dur"] for e in cases) / 1e6
        busy = sum(e["dur"] for e in cases) / 1e6
        compile_s = sum(float(e["args"].get("compile_seconds") or 0) for e in cases)
        # The worker's own split of its seconds (inputs made / the call / the work after it), where its
        # replies carry one. The worker starts once the inputs are sent, while the judge computes its golden
        # answer, so its seconds may be more than the reply's wait (which begins after the golden answer).
        own = [
            sum(float(e["args"].get(f"worker_{k}_seconds") or 0) for e in cases) for k in ("inputs", "call", "after")
        ]
        worker = f"; worker {own[0]:.2f}/{own[1]:.2f}/{own[2]:.2f}" if any(own) else ""
        lines.append(
            f"  {t}: {len(cases)}, {first:6.2f}-{last:6.2f} s, busy {busy:6.2f} "
            f"({part['inputs, sent']:.2f} / {part['golden answer']:.2f} / {part[REPLY]:.2f}"
            f" [{compile_s:.2f}{worker}] / {part['check']:.2f}), idle {last - first - busy:6.2f}"
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    for path in argv:
        print(f"== {path}")
        print(summarise(load(path)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
