#!/usr/bin/env python3
"""Verdicts that hold in company: judges sharing one GPU (judge.gpu_admission), part by part (issue 39).

    python tests/bench/company.py PART --out DIR [--sandbox bwrap]

Parts (each writes DIR/PART.json; ``summary`` prints them all as one table):

- ``alone``     each reference (IDS, default 93-98) judged alone, a fresh copy each (new bytes), speed on: the
                verdict, the wall time, the speed score (the geometric-mean speedup);
- ``together``  N (8, --n) submits at once of fresh copies: every problem, then 94 and 95 again, and so on;
                every verdict must be AC and each speedup within 3% of ``alone``'s (when DIR/alone.json is
                there); each judge's timeline under DIR/timelines-together-N (the lock check reads them);
- ``bomb``      94's device-memory bomb (submissions/memory_limit_exceeded/device_memory_bomb.py) beside the six
                references, all at once: the bomb MLE (or RJ), every reference AC;
- ``mixed``     ``judge serve`` judging 10 corpus files, ``judge grade`` of a roster of 8, and 4 submits, at once:
                every verdict as its corpus folder declares;
- ``outside``   another program fills the GPU (all but 1 GiB, held HOLD s) during one phase of a submit of 94's
                reference: its tests, its replays (a group later), its speed run's timed part; AC or IE, never
                RJ, MLE or WA;
- ``lockcheck`` from the timelines of ``together``: no judge's hold of the GPU shared (a case, a replay, a check)
                overlaps another judge's timed part (warm-up, rounds, profiler clock, trim under the lock);
- ``summary``   one table of every part's results.

The roster's throughput (part f of the issue) is grade_throughput.py's: tests/gpu/calls/15-company.sh runs it.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

from judge_latency import fresh_copy  # noqa: E402

from judge.problems import find_problem  # noqa: E402

IDS = ["93", "94", "95", "96", "97", "98"]
TOLERANCE = 0.03
EXCLUSIVE = ("speed run: warm-up", "speed run: timed rounds", "speed run: profiler clock", "speed run: trim")


def submit(pid: str, path: Path, sandbox: str, env: dict | None = None, timeout: float = 600) -> dict:
    """One ``judge submit --json`` of PATH: a row of what the report says (its wall time from here)."""
    t0 = time.monotonic()
    argv = [sys.executable, "-m", "judge", "submit", pid, str(path), "--device", "cuda", "--sandbox", sandbox, "--json"]
    try:
        proc = subprocess.run(
            argv, cwd=ROOT, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}
        )
        report = json.loads(proc.stdout) if proc.stdout.strip() else {}
    except (subprocess.TimeoutExpired, ValueError) as exc:
        report = {"verdict": "none", "message": f"{type(exc).__name__}"}
    speed = report.get("speed") or {}
    timing = report.get("timing") or {}
    row = {
        "problem": pid,
        "file": path.name,
        "verdict": report.get("verdict"),
        "message": str(report.get("message", ""))[:300],
        "wall_s": round(time.monotonic() - t0, 1),
        "speedup": speed.get("speedup"),
        "points": speed.get("points"),
        "admission_wait_s": timing.get("gpu_admission_wait_seconds", 0.0),
        "lock_wait_s": (speed.get("phases") or {}).get("lock_wait_seconds"),
        "notes": [n for n in report.get("notes") or [] if "judged" in n or "GPU" in n],
    }
    print("done:", json.dumps(row), flush=True)  # as it ends: a part cut off by its limit still tells this much
    return row


def at_once(items: list[tuple[str, Path]], sandbox: str, env: dict | None = None) -> list[dict]:
    """Submit every (problem, file) at once, each in its own process; the rows in the items' order."""
    rows: list = [None] * len(items)

    def one(i, pid, path):
        rows[i] = submit(pid, path, sandbox, env)

    threads = [threading.Thread(target=one, args=(i, pid, path)) for i, (pid, path) in enumerate(items)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return rows


def reference(pid: str) -> Path:
    return fresh_copy(find_problem(pid).reference_path)


def part_alone(args) -> dict:
    rows = [submit(pid, reference(pid), args.sandbox) for pid in args.ids]
    return {"rows": rows, "ok": all(r["verdict"] == "AC" for r in rows)}


def part_together(args) -> dict:
    order = IDS + [x for _ in range(args.n) for x in ("94", "95", "96", "97", "93", "98")]
    items = [(pid, reference(pid)) for pid in order[: args.n]]
    timelines = args.out / f"timelines-together-{args.n}"
    timelines.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    rows = at_once(items, args.sandbox, env={"JUDGE_TIMELINE": str(timelines)})
    alone = {}
    if (args.out / "alone.json").is_file():
        alone = {r["problem"]: r["speedup"] for r in json.loads((args.out / "alone.json").read_text())["rows"]}
    for r in rows:
        base = alone.get(r["problem"])
        r["vs_alone"] = round(r["speedup"] / base - 1, 4) if base and r["speedup"] else None
    ok = all(r["verdict"] == "AC" for r in rows) and all(
        r["vs_alone"] is None or abs(r["vs_alone"]) <= TOLERANCE for r in rows
    )
    return {"rows": rows, "ok": ok, "wall_s": round(time.monotonic() - t0, 1), "compared": bool(alone)}


def part_bomb(args) -> dict:
    bomb = find_problem("94").directory / "submissions" / "memory_limit_exceeded" / "device_memory_bomb.py"
    items = [("94", fresh_copy(bomb))] + [(pid, reference(pid)) for pid in IDS]
    rows = at_once(items, args.sandbox)
    ok = rows[0]["verdict"] in ("MLE", "RJ") and all(r["verdict"] == "AC" for r in rows[1:])
    return {"rows": rows, "ok": ok}


def _corpus_picks(n: int) -> list[tuple[str, str, Path]]:
    """N corpus files (problem, declared verdict, path): accepted and wrong ones in turn, over the problems."""
    picks, lists = [], {pid: find_problem(pid).corpus() for pid in IDS}
    i = 0
    while len(picks) < n:
        pid = IDS[i % len(IDS)]
        want = "AC" if i % 2 == 0 else "WA"
        files = [p for v, p in lists[pid] if v == want]
        if files:
            picks.append((pid, want, files[(i // len(IDS)) % len(files)]))
        i += 1
    return picks


def part_mixed(args) -> dict:
    from grade_throughput import make_roster
    from service_helpers import Served

    token = "company-staff-token"
    state = Path(tempfile.mkdtemp(prefix="company-serve-"))
    # (Served's own --device cpu --sandbox process come first: the last of a repeated option is click's.)
    served = Served(
        state,
        "--device",
        "cuda",
        "--sandbox",
        args.sandbox,
        "--rate-limit",
        "off",
        "--max-pending",
        "20",
        env={"JUDGE_SERVE_TOKEN": token},
    )
    rows, t0 = [], time.monotonic()
    try:
        jobs = []
        for k, (pid, want, path) in enumerate(_corpus_picks(10)):
            job = served.submit(
                token, pid, path.read_text() + f"\n# company {time.time_ns()}\n", filename=path.name, student=f"s{k}"
            )
            jobs.append((pid, want, path, job))
        roster = Path(tempfile.mkdtemp(prefix="company-roster-"))
        expected = make_roster(find_problem("94"), 8, roster, tag=f" company {time.time_ns()}")
        out = Path(tempfile.mkdtemp(prefix="company-grade-"))
        grade = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "judge",
                "grade",
                str(roster),
                "--problem",
                "94",
                "--out",
                str(out),
                "--sandbox",
                args.sandbox,
                "--no-progress",
                "--device",
                "cuda",
            ],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        subs = at_once([(pid, reference(pid)) for pid in ("98", "95", "94", "97")], args.sandbox)
        grade.wait(timeout=900)
        summary = json.loads((out / "summary.json").read_text())
        got = {}
        for p in summary["problems"]:
            for v, k in p["verdicts"].items():
                got[v] = got.get(v, 0) + k
        rows.append(
            {
                "problem": "94",
                "file": "grade: a roster of 8",
                "verdict": json.dumps(got, sort_keys=True),
                "declared": json.dumps(expected, sort_keys=True),
                "wall_s": round(time.monotonic() - t0, 1),
                "admission": summary["run"].get("gpu_admission"),
            }
        )
        for pid, want, path, job in jobs:
            doc = served.wait_done(token, job, timeout=900)
            report = doc.get("report") or {}
            rows.append(
                {
                    "problem": pid,
                    "file": f"serve: {path.name}",
                    "verdict": doc.get("verdict"),
                    "declared": want,
                    "message": str(report.get("message", ""))[:200],
                }
            )
        for r in subs:
            rows.append({**r, "file": f"submit: {r['file']}", "declared": "AC"})
    finally:
        served.stop()
    ok = all(r["verdict"] == r["declared"] for r in rows)
    return {"rows": rows, "ok": ok, "wall_s": round(time.monotonic() - t0, 1)}


HOG = """
import sys, time, torch
leave, hold = int(sys.argv[1]), float(sys.argv[2])
free, _ = torch.cuda.mem_get_info()
held = torch.empty(max(0, free - leave), dtype=torch.uint8, device="cuda")
print("hog holds", held.numel() >> 20, "MiB", flush=True)
time.sleep(hold)
"""


def _ledger(gpu: int = 0) -> list[dict]:
    from judge.gpu_admission import Admission

    return [e.__dict__ for e in Admission(gpu).snapshot()]


def part_outside(args) -> dict:
    """For each phase, a submit of 94's reference; a watcher fills the GPU when the judge reaches it (read from
    the host's admission ledger: its reservation admitted; a group later; its timed region in use)."""
    rows = []
    for phase in args.phases:
        path = reference("94")
        result = {}
        t = threading.Thread(target=lambda: result.update(submit("94", path, args.sandbox)))
        t0 = time.monotonic()
        t.start()
        fired = None
        while t.is_alive() and fired is None:
            mine = [e for e in _ledger() if e["held"]]
            if phase == "cases" and mine:
                time.sleep(2.0)
                fired = time.monotonic() - t0
            elif phase == "replay" and mine and time.monotonic() - t0 > args.replay_after:
                fired = time.monotonic() - t0
            elif phase == "speed" and any(e["timing"] for e in mine):
                fired = time.monotonic() - t0
            else:
                time.sleep(0.1)
        hog = None
        if fired is not None:
            hog = subprocess.Popen(
                [sys.executable, "-c", HOG, str(1 << 30), str(args.hold)], stdout=subprocess.PIPE, text=True
            )
        t.join()
        if hog is not None:
            hog.kill()
            hog.wait()
        ok = result.get("verdict") in ("AC", "IE")
        rows.append(
            {**result, "file": f"{phase}: {result.get('file')}", "fired_at_s": fired and round(fired, 1), "ok": ok}
        )
    return {"rows": rows, "ok": all(r["ok"] and r["fired_at_s"] is not None for r in rows)}


def part_lockcheck(args) -> dict:
    """Every judge's timed part against every other judge's holds of the GPU shared, on the host's clock."""
    timed, shared = [], []
    for path in glob.glob(str(args.out / "timelines-together-*" / "timeline-*.json")):
        doc = json.loads(Path(path).read_text())
        origin = (doc.get("otherData") or {}).get("monotonic_origin_s")
        if origin is None:
            continue
        for e in doc["traceEvents"]:
            if e.get("ph") != "X":
                continue
            span = (e["pid"], origin + e["ts"] / 1e6, origin + (e["ts"] + e["dur"]) / 1e6, e["name"])
            if e["name"] in EXCLUSIVE:
                timed.append(span)
            elif e["name"] == "GPU held shared":
                shared.append(span)
    overlaps = [
        (t[3], s[3], round(min(t[2], s[2]) - max(t[1], s[1]), 4))
        for t in timed
        for s in shared
        if t[0] != s[0] and min(t[2], s[2]) - max(t[1], s[1]) > 1e-3
    ]
    return {
        "rows": [
            {
                "problem": "-",
                "file": f"{len(timed)} timed spans, {len(shared)} shared holds",
                "verdict": f"{len(overlaps)} overlaps",
                "overlaps": overlaps[:20],
            }
        ],
        "ok": bool(timed) and not overlaps,
    }


def part_summary(args) -> dict:
    lines = [
        f"{'part':<12} {'problem':<8} {'file':<44} {'verdict':<8} {'wall s':>7} {'speedup':>8} "
        f"{'vs alone':>9} {'adm. wait':>9}"
    ]
    verdicts = []
    for path in sorted(args.out.glob("*.json")):
        if path.stem == "summary":
            continue
        doc = json.loads(path.read_text())
        verdicts.append(f"{path.stem}: {'ok' if doc.get('ok') else 'NOT OK'}")
        for r in doc.get("rows", []):
            vs = r.get("vs_alone")
            lines.append(
                f"{path.stem:<12} {str(r.get('problem')):<8} {str(r.get('file'))[:44]:<44} "
                f"{str(r.get('verdict'))[:8]:<8} {r.get('wall_s') or '':>7} "
                f"{'' if r.get('speedup') is None else round(r['speedup'], 3):>8} "
                f"{'' if vs is None else f'{vs:+.1%}':>9} {r.get('admission_wait_s') or '':>9}"
            )
            if r.get("verdict") not in ("AC",) and r.get("message"):
                lines.append(f"{'':<12} {r['message'][:150]}")
    print("\n".join(lines + [""] + verdicts))
    return {"rows": [], "ok": True}


PARTS = {
    "alone": part_alone,
    "together": part_together,
    "bomb": part_bomb,
    "mixed": part_mixed,
    "outside": part_outside,
    "lockcheck": part_lockcheck,
    "summary": part_summary,
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("part", choices=sorted(PARTS))
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--sandbox", default="bwrap")
    ap.add_argument("--ids", nargs="*", default=IDS)
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--phases", nargs="*", default=["cases", "replay", "speed"])
    ap.add_argument("--hold", type=float, default=15.0, help="seconds the outside program holds the GPU")
    ap.add_argument("--replay-after", type=float, default=8.0, help="the replay phase's fill: seconds after start")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    result = PARTS[args.part](args)
    if args.part != "summary":
        name = f"{args.part}-{args.n}" if args.part == "together" else args.part
        (args.out / f"{name}.json").write_text(json.dumps(result, indent=1))
        for r in result["rows"]:
            print(json.dumps(r))
        print(f"{name}: {'ok' if result['ok'] else 'NOT OK'}")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
