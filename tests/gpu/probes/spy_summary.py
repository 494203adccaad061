#!/usr/bin/env python3
"""Where a command's processes spent their time, from py-spy's raw samples (`py-spy record --format raw
--subprocesses`): per kind of process (the judge, its case workers, its replay workers, the speed run's
trusted workers), the samples it had and the functions that hold most of them, inclusive and by themselves.

py-spy nests a child's stack under its parent's ("process PID:\"CMDLINE\"" frames); a sample belongs to the
innermost process named in it. Idle threads are not sampled (py-spy's default), so the figures are where the
processes ran, not where they waited. A function's inclusive share counts a sample once however deep it
recurs.

    python tests/gpu/probes/spy_summary.py RAW.txt [--top 30]
"""

import argparse
import collections
import re
import sys

PROCESS = re.compile(r'^process (\d+):"(.*)"$')
GENERIC = re.compile(r"\(<frozen |\(click/|^<module> \(judge/(untrusted/)?__main__\.py\)")


def kind_of(cmdline: str) -> str:
    if "judge.untrusted.replay" in cmdline:
        return "replay worker"
    if "judge.untrusted" in cmdline:
        return "worker"
    if " -m judge " in f" {cmdline} " or cmdline.endswith("-m judge"):
        return "judge"
    return cmdline.split(" ")[0].rsplit("/", 1)[-1] or "judge (root)"


def frame_key(frame: str) -> str:
    """ "name (path:line)" -> "name (path)": a function, whatever line it was on."""
    if " (" not in frame:
        return frame
    name, _, where = frame.partition(" (")
    return f"{name} ({where.rsplit(':', 1)[0].rstrip(')')})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("raw")
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args()
    samples = collections.Counter()
    pids = collections.defaultdict(set)
    inclusive = collections.defaultdict(collections.Counter)
    own = collections.defaultdict(collections.Counter)
    for line in open(args.raw, encoding="utf-8", errors="replace"):
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = stack.split(";")
        start, kind = 0, "judge (root)"
        for i, f in enumerate(frames):
            m = PROCESS.match(f)
            if m:
                start, kind = i + 1, kind_of(m.group(2)) if m.group(2) else "judge (root)"
                pids[kind].add(m.group(1))
        mine = [frame_key(f) for f in frames[start:]]
        samples[kind] += n
        for key in set(mine):
            inclusive[kind][key] += n
        if mine:
            own[kind][mine[-1]] += n
    total = sum(samples.values())
    print(f"{total} samples in all")
    for kind, n in samples.most_common():
        print(f"\n## {kind}: {n} samples ({100 * n / max(total, 1):.1f}%), {len(pids[kind]) or 1} process(es)")
        print("-- inclusive (the interpreter's import machinery, runpy and click left out)")
        ranked = [(key, v) for key, v in inclusive[kind].most_common() if not GENERIC.search(key)]
        for key, v in ranked[: args.top]:
            print(f"{v:7d} {100 * v / n:5.1f}%  {key}")
        print("-- by itself")
        for key, v in own[kind].most_common(args.top // 2):
            print(f"{v:7d} {100 * v / n:5.1f}%  {key}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
