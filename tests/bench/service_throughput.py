"""The grading service under a burst: N submissions from S students posted at once to `judge serve`, until all
are judged, with the status calls' latency measured while the queue drains.

A real `python -m judge serve` (uvicorn, on a free local port, a fresh --state, --rate-limit off and
--max-pending 0 so that nothing is refused) with a token per student; the N submissions are posted at the same
moment (one thread each) through `POST /submissions`, N/S per student. The files come from the problems'
corpora (by default problem 93's accepted, wrong-answer and compile-error files in turn), each made distinct
by a comment (the service judges a file it already has only once per student; distinct files are what a
deadline brings). While jobs are pending, each student asks `GET /submissions/{id}` about one of their jobs
every --poll-every seconds (one thread a student, as their open pages do), and every answer's time is kept:
the p50, p95 and max of those are the status latency.

What is checked: every post answered 202 with its own id; every job done, with the corpus file's verdict;
none lost (the store holds N done jobs with a report and N results); each done once (started once, and one
"job ID ... " line per job in the service's log, where a job is logged when it is finished).

    python tests/bench/service_throughput.py                                 # 50 x problem 93, --jobs 2, --max-examples 1
    python tests/bench/service_throughput.py -n 200 --students 20 --problem 101 --problem 102 --problem 103 --problem 104
    python tests/bench/service_throughput.py -n 20 --jobs 1 --max-examples 0     # 0: each problem's own count

Prints the figures (with the host's load average, before and after), and a Markdown row for
docs/measurements/. Exit 0 when every check held (and the p95 is within --p95-ms, when given), 1 when one
failed (the row says which), 2 for a bad argument or a service that would not start.
"""

from __future__ import annotations

import argparse
import base64
import collections
import concurrent.futures
import json
import os
import platform
import random
import re
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from judge.problems import find_problem  # noqa: E402

KEEP = ("AC", "WA", "CE")  # verdicts that end in seconds (TLE, MLE and the hostile files are other benches)


def pick_files(problems, n: int, verdicts) -> list[tuple]:
    """(problem, path, expected verdict) for n submissions: the corpora's files in turn, one verdict after
    another (AC, WA, CE, AC, ...), so every stretch of the burst has the mix."""
    by_verdict = collections.defaultdict(list)
    for p in problems:
        for verdict, path in p.corpus():
            if verdict in verdicts:
                by_verdict[verdict].append((p, path, verdict))
    order = [v for v in verdicts if by_verdict[v]]
    if not order:
        raise SystemExit("no corpus files with those verdicts")
    return [
        by_verdict[order[i % len(order)]][(i // len(order)) % len(by_verdict[order[i % len(order)]])] for i in range(n)
    ]


class Service:
    def __init__(self, state: Path, tokens: Path, jobs: int, max_examples: int, sandbox: str):
        argv = [
            sys.executable,
            "-m",
            "judge",
            "serve",
            "--port",
            "0",
            "--device",
            "cpu",
            "--sandbox",
            sandbox,
            "--state",
            str(state),
            "--tokens",
            str(tokens),
            "--jobs",
            str(jobs),
            "--rate-limit",
            "off",
            "--max-pending",
            "0",
        ]
        if max_examples:
            argv += ["--max-examples", str(max_examples)]
        self.argv = argv
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        self.proc = subprocess.Popen(
            argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env
        )
        first = self.proc.stderr.readline()
        match = re.search(r"http://[\d.]+:\d+", first)
        if not match:
            self.proc.kill()
            raise SystemExit(f"the service did not start: {first.strip()}")
        self.url = match.group(0)
        self.lines = [first]
        self.reader = threading.Thread(target=lambda: self.lines.extend(self.proc.stderr), daemon=True)
        self.reader.start()

    def call(self, method, path, body=None, token=None):
        request = urllib.request.Request(
            self.url + path,
            method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})},
        )
        try:
            with urllib.request.urlopen(request, timeout=120) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"{}")

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.reader.join(30)  # every line of its log read


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def burst(
    problems,
    n: int = 50,
    students: int | None = None,
    jobs: int = 2,
    max_examples: int = 1,
    sandbox: str = "process",
    timeout: float = 1800,
    poll_every: float = 1.0,
) -> dict:
    """Post N submissions from STUDENTS students (default: one each) at once; wait for all; return the figures
    and the checks (``checks``: name -> held)."""
    students = students or n
    subs = pick_files(problems, n, KEEP)
    names = [f"s{i:03d}" for i in range(students)]
    people = {name: f"bench-student-{name}-token-0123456789" for name in names}
    owner = [names[i % students] for i in range(n)]
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="judge-service-bench-") as tmp:
        tmp = Path(tmp)
        (tmp / "tokens.csv").write_text("name,token\n" + "".join(f"{k},{t}\n" for k, t in people.items()))
        started_service = time.monotonic()
        svc = Service(tmp / "state", tmp / "tokens.csv", jobs, max_examples, sandbox)
        latencies: list[float] = []
        try:
            while svc.call("GET", "/health")[1].get("ok") is not True:
                time.sleep(0.2)
            up = time.monotonic() - started_service

            def post(i):
                p, path, _v = subs[i]
                # A distinct file per submission (a comment at the end), as real submissions are; the bytes as
                # they are (some CE files are not UTF-8), as the page's upload sends them.
                data = path.read_bytes() + f"\n# {owner[i]} {i}\n".encode()
                return svc.call(
                    "POST",
                    "/submissions",
                    {"problem": p.id, "filename": path.name, "source": base64.b64encode(data).decode()},
                    people[owner[i]],
                )

            barrier = time.monotonic()
            with concurrent.futures.ThreadPoolExecutor(n) as pool:
                answers = list(pool.map(post, range(n)))
            posted = time.monotonic() - barrier
            ids = [doc.get("id") for code, doc in answers]
            refused = [(code, doc) for code, doc in answers if code != 202]
            docs: dict[str, dict] = {}
            lock = threading.Lock()
            draining = threading.Event()

            def poll(student: int):  # a student's page asking how one of their jobs is doing, until all are done
                rng = random.Random(student)
                mine = [i for i in range(n) if i % students == student and ids[i]]
                while mine and not draining.wait(poll_every * rng.uniform(0.5, 1.5)):
                    i = rng.choice(mine)
                    t0 = time.perf_counter()
                    code, doc = svc.call("GET", f"/submissions/{ids[i]}", token=people[owner[i]])
                    elapsed = time.perf_counter() - t0
                    with lock:
                        latencies.append(elapsed)
                        if code == 200 and doc.get("status") == "done":
                            docs[ids[i]] = doc

            threads = [threading.Thread(target=poll, args=(s,), daemon=True) for s in range(students)]
            for t in threads:
                t.start()
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                counts = svc.call("GET", "/health")[1]["jobs"]
                if counts["done"] >= n - len(refused):
                    break
                time.sleep(0.5)
            draining.set()
            for t in threads:
                t.join(30)
            for i, job in enumerate(ids):  # every report, read once more at the end
                if job and job not in docs:
                    code, doc = svc.call("GET", f"/submissions/{job}", token=people[owner[i]])
                    if code == 200 and doc["status"] == "done":
                        docs[job] = doc
            wall = time.monotonic() - barrier
        finally:
            svc.stop()
        with sqlite3.connect(tmp / "state" / "results.sqlite") as db:
            stored = db.execute("SELECT COUNT(*) FROM jobs WHERE status = 'done' AND report IS NOT NULL").fetchone()[0]
            results = db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
            attempts = db.execute("SELECT MAX(attempts), MIN(attempts) FROM jobs").fetchone()
            spans = db.execute("SELECT started_at, finished_at FROM jobs WHERE status = 'done'").fetchall()
    finished = [ln.split()[1] for ln in svc.lines if ln.startswith("job ")]
    elapsed = [(datetime.fromisoformat(b) - datetime.fromisoformat(a)).total_seconds() for a, b in spans if a and b]
    got = collections.Counter(d.get("verdict") for d in docs.values())
    mismatches = [
        (subs[i][1].name, subs[i][2], docs[j].get("verdict"))
        for i, j in enumerate(ids)
        if j in docs and docs[j].get("verdict") != subs[i][2]
    ]
    checks = {
        "all posts 202": not refused,
        "distinct ids": len(set(ids)) == n,
        "all done": len(docs) == n,
        f"{n} stored": stored == n,
        f"{n} results": results == n,
        "started once": tuple(attempts) == (1, 1),
        "finished once": sorted(finished) == sorted(ids),
        "verdicts as the corpus": not mismatches,
    }
    return {
        "n": n,
        "students": students,
        "jobs": jobs,
        "max_examples": max_examples,
        "argv": svc.argv,
        "up": up,
        "posted": posted,
        "wall": wall,
        "verdicts": dict(sorted(got.items())),
        "mismatches": mismatches,
        "refused": refused,
        "job_mean": sum(elapsed) / max(len(elapsed), 1),
        "job_max": max(elapsed, default=0),
        "status_calls": len(latencies),
        "p50_ms": _percentile(latencies, 0.5) * 1000,
        "p95_ms": _percentile(latencies, 0.95) * 1000,
        "max_ms": max(latencies, default=0) * 1000,
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "cores": os.cpu_count(),
        "checks": checks,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--problem", action="append", default=None, help="A problem whose corpus to post (repeat; default 93)."
    )
    ap.add_argument("-n", type=int, default=50, help="Submissions posted at once (default 50).")
    ap.add_argument("--students", type=int, default=None, help="Students they come from (default: one each).")
    ap.add_argument("--jobs", type=int, default=2, help="judge serve --jobs (default 2).")
    ap.add_argument(
        "--max-examples",
        type=int,
        default=1,
        help="judge serve --max-examples: drawn cases per group (default 1; 0: each problem's own).",
    )
    ap.add_argument("--sandbox", default="process", help="judge serve --sandbox (default process).")
    ap.add_argument(
        "--poll-every",
        type=float,
        default=1.0,
        help="Seconds between a student's status calls while jobs are pending (default 1).",
    )
    ap.add_argument("--p95-ms", type=float, default=None, help="Fail when the status calls' p95 is above this.")
    ap.add_argument("--timeout", type=float, default=1800, help="Seconds to wait for the last job.")
    args = ap.parse_args()
    problems = [find_problem(k) for k in (args.problem or ["93"])]
    if None in problems or args.n < 1 or args.jobs < 1 or args.max_examples < 0 or (args.students or 1) < 1:
        print("bad arguments: unknown problem, or -n/--jobs/--students below 1", file=sys.stderr)
        return 2
    r = burst(
        problems, args.n, args.students, args.jobs, args.max_examples, args.sandbox, args.timeout, args.poll_every
    )
    checks = dict(r["checks"])
    if args.p95_ms is not None:
        checks[f"p95 <= {args.p95_ms:g} ms"] = r["p95_ms"] <= args.p95_ms
    failed = [k for k, ok in checks.items() if not ok]
    problems_s = ", ".join(f"{p.id} {p.slug}" for p in problems)
    print(f"service: {' '.join(r['argv'][1:])}", file=sys.stderr)
    print(
        f"host: {platform.node()} ({platform.machine()}, {r['cores']} cores), load average before "
        f"{' '.join(f'{x:.2f}' for x in r['load_before'])}, after {' '.join(f'{x:.2f}' for x in r['load_after'])}",
        file=sys.stderr,
    )
    print(
        f"{r['n']} submissions from {r['students']} students ({problems_s}), --jobs {r['jobs']}, max_examples "
        f"{r['max_examples'] or 'spec'}: healthy after {r['up']:.1f} s; all posted (202) in {r['posted']:.2f} s; "
        f"all judged and stored in {r['wall']:.1f} s ({r['n'] / r['wall'] * 3600:.0f}/hour); per job, claimed to "
        f"stored: mean {r['job_mean']:.1f} s, max {r['job_max']:.1f} s; verdicts {r['verdicts']}",
        file=sys.stderr,
    )
    print(
        f"status calls meanwhile: {r['status_calls']}, p50 {r['p50_ms']:.1f} ms, p95 {r['p95_ms']:.1f} ms, max "
        f"{r['max_ms']:.1f} ms",
        file=sys.stderr,
    )
    for name, want, have in r["mismatches"]:
        print(f"  {name}: expected {want}, got {have}", file=sys.stderr)
    if r["refused"]:
        print(f"  refused: {r['refused'][:3]}", file=sys.stderr)
    verdicts = ", ".join(f"{v} {c}" for v, c in r["verdicts"].items())
    print(
        f"| {problems_s} | {r['n']} / {r['students']} | {r['jobs']} | {r['max_examples'] or 'spec'} | "
        f"{r['posted']:.2f} s | {r['wall']:.1f} s | {r['n'] / r['wall'] * 3600:.0f} | {r['p95_ms']:.0f} ms "
        f"(load {r['load_before'][0]:.1f}) | {verdicts} | "
        f"{'all held' if not failed else 'FAILED: ' + ', '.join(failed)} |"
    )
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
