"""The grading service under a burst: N submissions posted at once to `judge serve`, until all are judged.

A real `python -m judge serve` (uvicorn, on a free local port, a fresh --state) with a token per student;
N students each post one file at the same moment (one thread each) through `POST /submissions`, then every
job is polled until done. The files come from the problems' corpora (by default problem 93's accepted,
wrong-answer and compile-error files in turn), each made distinct by a comment (the service judges a file
it already has only once per student; distinct files are what a deadline brings). What is checked: every
post answered 202 with its own id, every job done with the corpus file's verdict, the store holds N done
jobs with a report and N results, and no job was started twice.

    python tests/bench/service_throughput.py                                 # 50 x problem 93, --jobs 2, --max-examples 1
    python tests/bench/service_throughput.py --problem 101 --problem 102 --problem 103 --problem 104
    python tests/bench/service_throughput.py -n 20 --jobs 1 --max-examples 0     # 0: each problem's own count

Prints the figures, and a Markdown row for docs/measurements/. Exit 0 when every check held, 1 when
one failed (the row says which), 2 for a bad argument or a service that would not start.
"""

from __future__ import annotations

import argparse
import base64
import collections
import concurrent.futures
import json
import platform
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
    return [by_verdict[order[i % len(order)]][(i // len(order)) % len(by_verdict[order[i % len(order)]])]
            for i in range(n)]


class Service:
    def __init__(self, state: Path, tokens: Path, jobs: int, max_examples: int, sandbox: str):
        argv = [sys.executable, "-m", "judge", "serve", "--port", "0", "--device", "cpu", "--sandbox", sandbox,
                "--state", str(state), "--tokens", str(tokens), "--jobs", str(jobs), "--rate-limit", "off"]
        if max_examples:
            argv += ["--max-examples", str(max_examples)]
        self.argv = argv
        self.proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        first = self.proc.stderr.readline()
        match = re.search(r"http://[\d.]+:\d+", first)
        if not match:
            self.proc.kill()
            raise SystemExit(f"the service did not start: {first.strip()}")
        self.url = match.group(0)
        self.lines = [first]
        threading.Thread(target=lambda: self.lines.extend(self.proc.stderr), daemon=True).start()

    def call(self, method, path, body=None, token=None):
        request = urllib.request.Request(self.url + path, method=method,
                                         data=json.dumps(body).encode() if body is not None else None,
                                         headers={"Content-Type": "application/json",
                                                  **({"Authorization": f"Bearer {token}"} if token else {})})
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problem", action="append", default=None, help="A problem whose corpus to post (repeat; "
                                                                      "default 93).")
    ap.add_argument("-n", type=int, default=50, help="Submissions, one per student, posted at once (default 50).")
    ap.add_argument("--jobs", type=int, default=2, help="judge serve --jobs (default 2).")
    ap.add_argument("--max-examples", type=int, default=1,
                    help="judge serve --max-examples: drawn cases per group (default 1; 0: each problem's own).")
    ap.add_argument("--sandbox", default="process", help="judge serve --sandbox (default process).")
    ap.add_argument("--timeout", type=float, default=1800, help="Seconds to wait for the last job.")
    args = ap.parse_args()
    problems = [find_problem(k) for k in (args.problem or ["93"])]
    if None in problems or args.n < 1 or args.jobs < 1 or args.max_examples < 0:
        print("bad arguments: unknown problem, or -n/--jobs below 1", file=sys.stderr)
        return 2
    subs = pick_files(problems, args.n, KEEP)
    people = {f"s{i:03d}": f"bench-student-{i:03d}-token-0123456789" for i in range(args.n)}
    with tempfile.TemporaryDirectory(prefix="judge-service-bench-") as tmp:
        tmp = Path(tmp)
        (tmp / "tokens.csv").write_text("name,token\n" + "".join(f"{n},{t}\n" for n, t in people.items()))
        started_service = time.monotonic()
        svc = Service(tmp / "state", tmp / "tokens.csv", args.jobs, args.max_examples, args.sandbox)
        try:
            while svc.call("GET", "/health")[1].get("ok") is not True:
                time.sleep(0.2)
            up = time.monotonic() - started_service

            def post(i):
                (p, path, _v), (name, token) = subs[i], list(people.items())[i]
                # A distinct file per student (a comment at the end), as real submissions are; the bytes as they
                # are (some CE files are not UTF-8), as the page's upload sends them.
                data = path.read_bytes() + f"\n# {name}\n".encode()
                return svc.call("POST", "/submissions", {"problem": p.id, "filename": path.name,
                                                         "source": base64.b64encode(data).decode()}, token)

            barrier = time.monotonic()
            with concurrent.futures.ThreadPoolExecutor(args.n) as pool:
                answers = list(pool.map(post, range(args.n)))
            posted = time.monotonic() - barrier
            ids = [doc.get("id") for code, doc in answers]
            refused = [(code, doc) for code, doc in answers if code != 202]
            docs = {}
            deadline = time.monotonic() + args.timeout
            tokens = list(people.values())
            while len(docs) < len(ids) - len(refused) and time.monotonic() < deadline:
                for i, job in enumerate(ids):
                    if job and job not in docs:
                        code, doc = svc.call("GET", f"/submissions/{job}", token=tokens[i])
                        if code == 200 and doc["status"] == "done":
                            docs[job] = doc
                time.sleep(0.5)
            wall = time.monotonic() - barrier
        finally:
            svc.stop()
        with sqlite3.connect(tmp / "state" / "results.sqlite") as db:
            stored = db.execute("SELECT COUNT(*) FROM jobs WHERE status = 'done' AND report IS NOT NULL").fetchone()[0]
            results = db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
            attempts = db.execute("SELECT MAX(attempts) FROM jobs").fetchone()[0]
            spans = db.execute("SELECT started_at, finished_at FROM jobs WHERE status = 'done'").fetchall()
    # Each job from its claim to its result (the job's child: its start, the judging, the store).
    elapsed = [(datetime.fromisoformat(b) - datetime.fromisoformat(a)).total_seconds() for a, b in spans if a and b]
    got = collections.Counter(d.get("verdict") for d in docs.values())
    mismatches = [(subs[i][1].name, subs[i][2], docs[j].get("verdict")) for i, j in enumerate(ids)
                  if j in docs and docs[j].get("verdict") != subs[i][2]]
    problems_s = ", ".join(f"{p.id} {p.slug}" for p in problems)
    checks = {"all posts 202": not refused, "distinct ids": len(set(ids)) == args.n,
              "all done": len(docs) == args.n, f"{args.n} stored": stored == args.n,
              f"{args.n} results": results == args.n, "started once": attempts == 1,
              "verdicts as the corpus": not mismatches}
    failed = [k for k, ok in checks.items() if not ok]
    print(f"service: {' '.join(svc.argv[1:])}", file=sys.stderr)
    print(f"host: {platform.node()} ({platform.machine()}), load average {open('/proc/loadavg').read().split()[:3]}",
          file=sys.stderr)
    print(f"{args.n} submissions ({problems_s}), --jobs {args.jobs}, max_examples {args.max_examples or 'spec'}: "
          f"healthy after {up:.1f} s; all posted (202) in {posted:.2f} s; all judged and stored in {wall:.1f} s "
          f"({args.n / wall * 3600:.0f}/hour); per job, claimed to stored: mean {sum(elapsed) / max(len(elapsed), 1):.1f} s, "
          f"max {max(elapsed, default=0):.1f} s; verdicts {dict(sorted(got.items()))}", file=sys.stderr)
    for name, want, have in mismatches:
        print(f"  {name}: expected {want}, got {have}", file=sys.stderr)
    if refused:
        print(f"  refused: {refused[:3]}", file=sys.stderr)
    verdicts = ", ".join(f"{v} {c}" for v, c in sorted(got.items()))
    print(f"| {problems_s} | {args.n} | {args.jobs} | {args.max_examples or 'spec'} | {posted:.2f} s | {wall:.1f} s "
          f"| {args.n / wall * 3600:.0f} | {verdicts} | {'all held' if not failed else 'FAILED: ' + ', '.join(failed)} |")
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
