"""Batch-grading throughput: submissions per hour of `judge grade`, by executor and worker count.

A roster of N "students" is made from a problem's corpus (accepted and wrong
answers in turn, the mix a deadline brings), graded into a fresh store per
configuration, and timed end to end (the whole command: start-up, Ray's
start-up, judging, exports). Each configuration judges the same roster, and
must give each file the verdict its corpus folder declares: a row whose verdicts
differ says so ("NOT as declared") and the command exits 1, since a judge that
is fast by failing measures nothing (2026-12-05 on the H200: 12 softmax jobs at
once filled the GPU, "601 an hour" with five accepted files IE, MLE or RJ).

    python tests/bench/grade_throughput.py                          # CPU, interpreter: problem 93, 1 and 2 workers, local and Ray
    python tests/bench/grade_throughput.py --problem 94 -n 12
    python tests/bench/grade_throughput.py --device cuda --problem softmax --problem flash-attention-backward
    python tests/bench/grade_throughput.py --executors local --workers 1,2 --pool off,auto --sandbox bwrap --repeat 2

``--pool off,auto`` grades each roster with the worker pool off and on (judge.pool), one configuration after
the other and, with ``--repeat``, round after round, so that the machine's load falls on both alike; the table
then also gives each submission's start-up wait (the report's ``timing.start_wait_seconds``: from the session
asking for its first worker to that worker's hello), its mean and median, and how many workers the jobs
took from the pool.

On a GPU (--device cuda) the configurations are one GPU (local and Ray) and,
when there are two or more GPUs, two; ``--jobs 4,6`` grades each of them with
that many submissions at once per GPU in turn (default: the command's own,
judge.grading.executors.jobs_per_gpu). ``--job-workers 1,2`` compares the test workers each job gets, and
``--ab NAME=a,b`` a switch (the grading command with NAME=a, then NAME=b, the order swapped every round), side
by side in one run. Results print as a Markdown table for docs/measurements/.

Each configuration's JSON line also says what bound it: ``host`` is the host's
CPU, sampled every second from /proc/stat while the roster ran (``busy_mean``:
the cores' busy share, ``saturated``: the share of seconds at 90% or more), and
on a GPU ``gpu_util_mean`` (nvidia-smi's utilization, when nvidia-smi is
there). Near-full cores say fewer processes per job would pay; idle cores and
an idle GPU say more jobs at once would.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from judge.problems import find_problem  # noqa: E402


def make_roster(problem, n: int, where: Path, distinct: bool = False, tag: str = "") -> dict[str, int]:
    """N students: accepted and wrong files in turn, each list cycled. ``distinct``: every file once instead.
    ``tag``: written into every file's comment (a roster no kernel cache has seen: --fresh). Returns the verdicts
    the roster must get (each file's declared one), counted: a throughput whose verdicts differ does not count."""
    corpus = problem.corpus()
    accepted = [p for v, p in corpus if v == "AC"] or [problem.reference_path]
    wrong = [p for v, p in corpus if v == "WA"]
    declared = {p: v for v, p in corpus}
    picks = []
    for i in range(n):
        pool = wrong if (i % 2 and wrong) else accepted
        picks.append(pool[(i // 2) % len(pool)])
    if distinct:
        picks = list(dict.fromkeys(picks))
    for i, path in enumerate(picks):
        d = where / f"student{i:03d}"
        d.mkdir(parents=True)
        # A comment makes every file distinct, as real submissions are.
        (d / f"{problem.id}.py").write_text(path.read_text() + f"\n# student {i}{tag}\n")
    expected: dict[str, int] = {}
    for path in picks:
        v = declared.get(path, "AC")
        expected[v] = expected.get(v, 0) + 1
    return expected


class HostLoad:
    """The host's CPU (and, where nvidia-smi is, GPU) use, sampled every second in a thread while a roster runs."""

    def __init__(self, gpu: bool):
        import threading

        self.cpu: list[float] = []  # busy share of all cores, per second
        self.gpu: list[float] = []  # nvidia-smi's utilization.gpu of the first GPU, per second (0-100)
        self._gpu = gpu and shutil.which("nvidia-smi") is not None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    @staticmethod
    def _times() -> tuple[int, int] | None:
        try:
            with open("/proc/stat") as f:
                fields = [int(x) for x in f.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
        return sum(fields[:8]) - idle, sum(fields[:8])

    def _sample(self) -> None:
        last = self._times()
        while not self._stop.wait(1.0):
            now = self._times()
            if now is not None and last is not None and now[1] > last[1]:
                self.cpu.append((now[0] - last[0]) / (now[1] - last[1]))
            last = now
            if self._gpu:
                try:
                    out = subprocess.run(
                        ["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits", "-i", "0"],
                        capture_output=True,
                        text=True,
                        timeout=5,
                    ).stdout
                    self.gpu.append(float(out.split()[0]))
                except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
                    self._gpu = False

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def summary(self) -> dict:
        out: dict = {"cores": os.cpu_count(), "seconds": len(self.cpu)}
        if self.cpu:
            out["busy_mean"] = round(statistics.mean(self.cpu), 3)
            out["saturated"] = round(sum(c >= 0.9 for c in self.cpu) / len(self.cpu), 3)
        if self.gpu:
            out["gpu_util_mean"] = round(statistics.mean(self.gpu), 1)
        return out


def run_config(
    problem,
    roster: Path,
    out: Path,
    *,
    device: str,
    executor: str,
    workers: int,
    sandbox: str,
    seed: int,
    pool: str | None = None,
    tree: Path = ROOT,
    jobs: int | None = None,
    job_workers: int | None = None,
    ab: tuple[str, str] | None = None,
) -> dict:
    argv = [
        sys.executable,
        "-m",
        "judge",
        "grade",
        str(roster),
        "--problem",
        str(problem.id),
        "--out",
        str(out),
        "--executor",
        executor,
        "--sandbox",
        sandbox,
        "--seed",
        str(seed),
        "--no-progress",
        "--device",
        device,
    ]
    if pool is not None:
        argv += ["--pool", pool]
    argv += ["--jobs", str(workers)] if device == "cpu" else ["--gpus", ",".join(str(g) for g in range(workers))]
    if jobs is not None and device != "cpu":
        argv += ["--jobs", str(jobs)]
    t = time.monotonic()
    env = dict(os.environ)
    if job_workers is not None:
        env["JUDGE_WORKERS"] = str(job_workers)  # each job's test workers (judge.grading.executors.workers_per_job)
    if ab is not None:
        env[ab[0]] = ab[1]
    with HostLoad(gpu=device == "cuda") as load:
        proc = subprocess.run(argv, cwd=tree, capture_output=True, text=True, env=env)
    wall = time.monotonic() - t
    if proc.returncode == 3:  # some jobs ended in an internal error: say which, and go on (they count as judged)
        for student, message in _internal_errors(out / "results.sqlite"):
            print(f"IE for {student}: {message}", file=sys.stderr, flush=True)
    elif proc.returncode != 0:
        raise SystemExit(f"grade failed ({proc.returncode}): {proc.stderr.strip().splitlines()[-1:]}")
    summary = json.loads((out / "summary.json").read_text())
    verdicts = {}
    for p in summary["problems"]:
        for v, k in p["verdicts"].items():
            verdicts[v] = verdicts.get(v, 0) + k
    judged = summary["run"]["judged"]
    if os.environ.get("BENCH_REPORTS"):  # every full report kept, to read each verdict's timing
        _keep_reports(out / "results.sqlite", Path(os.environ["BENCH_REPORTS"]) / out.name)
    waits = _start_waits(out / "results.sqlite")
    split = _time_split(out / "results.sqlite")
    slots = workers if device == "cpu" else (jobs or 0) * workers  # jobs at once: per GPU times the GPUs
    return {
        "executor": executor,
        "workers": workers,
        "jobs": jobs,
        "job_workers": job_workers,
        "pool": pool,
        "ab": f"{ab[0]}={ab[1]}" if ab else None,
        "judged": judged,
        "wall_s": round(wall, 1),
        "per_hour": round(judged / wall * 3600),
        "verdicts": verdicts,
        "host": load.summary(),
        "start_wait_mean": round(statistics.mean(waits), 2) if waits else None,
        "start_wait_median": round(statistics.median(waits), 2) if waits else None,
        "pool_stats": summary["run"].get("pool"),
        "job_spares": summary["run"].get("job_spares"),
        "gpu_admission": summary["run"].get("gpu_admission"),
        "time_split": split,
        "steady": steady_rate(_finish_times(out / "results.sqlite"), slots),
    }


def _query(db: Path, sql: str) -> list[tuple]:
    """The rows of ``sql`` in the roster's results database."""
    import sqlite3

    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _keep_reports(db: Path, where: Path) -> None:
    where.mkdir(parents=True, exist_ok=True)
    for student, text in _query(db, "SELECT student, report FROM results"):
        (where / f"{student}.json").write_text(text)


def _internal_errors(db: Path) -> list[tuple[str, str]]:
    return [
        (s, json.loads(r).get("message", "")[:400])
        for s, r in _query(db, "SELECT student, report FROM results WHERE verdict = 'IE'")
    ]


def _start_waits(db: Path) -> list[float]:
    """Each judged submission's wait for its first worker (its report's timing.start_wait_seconds)."""
    out = []
    for (text,) in _query(db, "SELECT report FROM results"):
        wait = (json.loads(text).get("timing") or {}).get("start_wait_seconds")
        if wait is not None:
            out.append(float(wait))
    return out


def _finish_times(db: Path) -> list[float]:
    """When each job of the roster was recorded (its results row's graded_at, to the second), in seconds."""
    import datetime as dt

    return sorted(dt.datetime.fromisoformat(t).timestamp() for (t,) in _query(db, "SELECT graded_at FROM results"))


def steady_rate(finishes: list[float], slots: int) -> dict | None:
    """The rate while every slot was busy: a roster of N files on J slots starts J jobs at once, and each
    completion starts the next file until the queue is empty, at the (N - J)-th completion. Between the
    first completion and that one every slot holds a job, so the completions after the first moment one
    ended, up to that one, over that interval, are the rate a longer roster would keep; the ramp-up (every
    job starting at once, none done) and the tail (slots going idle one by one) are left out. ``per_hour``
    over the whole roster counts both. None where the roster is too short for the window (N - J < 3) or the
    slots are not known. The times are to the second (graded_at), so a window under a minute is rough."""
    import bisect

    n = len(finishes)
    if slots <= 0 or n - slots < 3:
        return None
    t0, t1 = finishes[0], finishes[n - slots - 1]
    if t1 <= t0:
        return None
    done = (n - slots) - bisect.bisect_right(finishes, t0)  # those at t0 itself opened the window
    return {"completions": done, "window_s": round(t1 - t0, 1), "per_hour": round(done / (t1 - t0) * 3600)}


SPLIT_KEYS = (
    "tests_seconds",
    "speed_seconds",
    "gpu_wait_seconds",
    "compile_seconds",
    "start_wait_seconds",
    "shrink_seconds",
)


def _time_split(db: Path) -> dict:
    """Where the roster's time went, by verdict: how many, the median of each report's elapsed seconds and of
    its timing figures, and their sums (a speed run holds the GPU to itself: the sum of ``speed_seconds`` is
    the least wall time the roster's speed runs take one after another; ``gpu_wait_seconds`` is a job's
    correctness cases waiting while another job times)."""
    by: dict[str, list[dict]] = {}
    for verdict, text in _query(db, "SELECT verdict, report FROM results"):
        report = json.loads(text)
        by.setdefault(verdict, []).append(
            {
                "elapsed_seconds": report.get("elapsed_seconds"),
                **{k: (report.get("timing") or {}).get(k) for k in SPLIT_KEYS},
            }
        )
    out = {}
    for verdict, items in sorted(by.items()):
        row = {"n": len(items)}
        for k in ("elapsed_seconds",) + SPLIT_KEYS:
            vals = [float(i[k]) for i in items if isinstance(i.get(k), (int, float))]
            if vals:
                row[k.removesuffix("_seconds") + "_median"] = round(statistics.median(vals), 2)
                row[k.removesuffix("_seconds") + "_sum"] = round(sum(vals), 1)
        out[verdict] = row
    return out


def main() -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problem", action="append", help="id or slug (repeat); default 93 on the CPU, 94 on a GPU")
    ap.add_argument("-n", type=int, default=8, help="submissions per roster")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--sandbox", default="process")
    ap.add_argument("--executors", default="local,ray")
    ap.add_argument(
        "--workers",
        default=None,
        help="worker counts, e.g. 1,2 (default: 1,2; on a GPU 1 and 2 when there are two GPUs)",
    )
    ap.add_argument(
        "--jobs",
        default=None,
        help="on a GPU, submissions judged at once per GPU to compare, "
        "e.g. 4,6 (default: the command's own, one configuration)",
    )
    ap.add_argument(
        "--job-workers",
        default=None,
        help="test workers per job to compare, e.g. 1,2 (JUDGE_WORKERS for the grading command; "
        "default: its split of the host's cores, judge.grading.executors.workers_per_job)",
    )
    ap.add_argument(
        "--ab",
        default=None,
        help="NAME=a,b (NAME alone: 0,1): the grading command with that environment variable at each "
        "value in turn, the order swapped every round (a switch's A/B side by side)",
    )
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--pool",
        default=None,
        help="pool settings to compare, e.g. off,auto (default: the command's own default, one configuration)",
    )
    ap.add_argument("--repeat", type=int, default=1, help="rounds of every configuration, interleaved")
    ap.add_argument(
        "--warm",
        action="store_true",
        help="grade every distinct file of the roster once first, not counted (warm kernel caches)",
    )
    ap.add_argument(
        "--fresh",
        action="store_true",
        help="every configuration and round grades a roster of its own, its files never seen by a "
        "kernel cache (the caches are keyed by a file's content, and real students' files "
        "differ): each pays its compiles, as a course's roster does",
    )
    ap.add_argument(
        "--trees",
        nargs="+",
        type=Path,
        default=None,
        help="checkouts to compare side by side: each configuration is graded by each tree's "
        "`python -m judge` (run in that folder) in turn, the order swapped every round",
    )
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
    pools = args.pool.split(",") if args.pool else [None]
    if args.jobs and args.device == "cpu":
        raise SystemExit("--jobs compares jobs per GPU; on the CPU --workers is the number of jobs at once")
    job_counts = [int(x) for x in args.jobs.split(",")] if args.jobs else [None]
    job_workers = [int(x) for x in args.job_workers.split(",")] if args.job_workers else [None]
    abs_ = [None]
    if args.ab:
        name, _, values = args.ab.partition("=")
        abs_ = [(name, v) for v in (values.split(",") if values else ["0", "1"])]
    rows = []
    for key in keys:
        problem = find_problem(key)
        if problem is None:
            raise SystemExit(f"unknown problem {key}")
        tmp = Path(tempfile.mkdtemp(prefix="grade-bench-"))
        try:
            expected = make_roster(problem, args.n, tmp / "roster")
            if args.warm:
                # Every distinct file of the roster once, not counted: the kernel caches are content-keyed, so
                # without this the first configuration pays the first compile of each file and the next ones
                # do not (2026-12-03 call 3: the first tree's roster compiled ~200 s more, summed over workers).
                make_roster(problem, args.n, tmp / "warm", distinct=True)
                first = (args.trees or [ROOT])[0]
                w = run_config(
                    problem,
                    tmp / "warm",
                    tmp / "out-warm",
                    device=args.device,
                    executor=executors[0],
                    workers=counts[0],
                    sandbox=args.sandbox,
                    seed=args.seed,
                    pool=pools[0],
                    tree=first.resolve(),
                )
                print(
                    json.dumps({"warm-up, not counted": w["judged"], "wall_s": w["wall_s"], "verdicts": w["verdicts"]}),
                    file=sys.stderr,
                    flush=True,
                )
            for round_ in range(args.repeat):
                for executor in executors:
                    for workers in counts:
                        for pool, jobs, jw in [(p, j, w) for p in pools for j in job_counts for w in job_workers]:
                            trees = args.trees or [ROOT]
                            # Trees and --ab values alternate, their order swapped every round.
                            pairs = [(t, a) for t in trees for a in abs_]
                            for tree, ab in pairs if round_ % 2 == 0 else pairs[::-1]:
                                name = "" if args.trees is None else "-" + tree.resolve().name
                                out = tmp / (
                                    f"out-{executor}-{workers}-{pool}-{jobs}-{round_}{name}"
                                    + (f"-w{jw}" if jw is not None else "")
                                    + (f"-{ab[0]}-{ab[1]}" if ab is not None else "")
                                )
                                roster = tmp / "roster"
                                if args.fresh:
                                    roster = tmp / f"roster-{out.name}"
                                    make_roster(
                                        problem, args.n, roster, tag=f" ({tmp.name}/{out.name})"
                                    )  # unique per run of this script too
                                r = run_config(
                                    problem,
                                    roster,
                                    out,
                                    device=args.device,
                                    executor=executor,
                                    workers=workers,
                                    sandbox=args.sandbox,
                                    seed=args.seed,
                                    pool=pool,
                                    tree=tree.resolve(),
                                    jobs=jobs,
                                    job_workers=jw,
                                    ab=ab,
                                )
                                r["problem"] = f"{problem.id} {problem.slug}"
                                r["round"] = round_ + 1
                                r["expected"] = expected
                                r["as_declared"] = r["verdicts"] == expected
                                if args.trees is not None:
                                    r["tree"] = str(tree)
                                rows.append(r)
                                print(json.dumps(r), file=sys.stderr, flush=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    unit = "GPU" if args.device == "cuda" else "interpreter worker"
    print(
        f"\n{args.device}, sandbox {args.sandbox}, {args.n} submissions per roster; "
        f"Python {platform.python_version()}\n"
    )
    if pools == [None]:
        print(
            f"| problem | tree | executor | {unit}s | jobs per GPU | round | submissions | wall | "
            "submissions/hour | every slot busy: /hour (completions, window) | host CPU busy (saturated) | "
            "verdicts |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(
                f"| {r['problem']}{' (' + r['ab'] + ')' if r.get('ab') else ''} | {r.get('tree', '.')} | "
                f"{r['executor']} | {r['workers']} | "
                f"{r['jobs'] or 'default'} | {r['round']} | {r['judged']} | {r['wall_s']} s | {r['per_hour']} | "
                f"{_steady(r)} | {_busy(r)} | {_verdicts(r)} |"
            )
        return rows
    print(
        f"| problem | {unit}s | pool | jobs per GPU | test workers per job | round | submissions | wall | "
        "submissions/hour | every slot busy: /hour (completions, window) | start-up wait mean | median | "
        "from the pool (taken / started own / warmed unused) | host CPU busy (saturated) | verdicts |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        ps = r.get("pool_stats")
        taken = f"{ps['taken']} / {ps['missed']} / {ps['wasted']}" if ps else "-"
        print(
            f"| {r['problem']}{' (' + r['ab'] + ')' if r.get('ab') else ''} | {r['workers']} | {r['pool']} | "
            f"{r['jobs'] or 'default'} | {r.get('job_workers') or 'default'} | {r['round']} | "
            f"{r['judged']} | {r['wall_s']} s | {r['per_hour']} | {_steady(r)} | {r['start_wait_mean']} s | "
            f"{r['start_wait_median']} s | {taken} | {_busy(r)} | {_verdicts(r)} |"
        )
    return rows


def _verdicts(r: dict) -> str:
    """The verdicts a roster got, and the declared ones where they differ (that row's figures do not count)."""
    got = ", ".join(f"{v} {k}" for v, k in sorted(r["verdicts"].items()))
    if r.get("as_declared", True):
        return got
    return got + " (NOT as declared: " + ", ".join(f"{v} {k}" for v, k in sorted(r["expected"].items())) + ")"


def _steady(r: dict) -> str:
    st = r.get("steady")
    return f"{st['per_hour']} ({st['completions']}, {st['window_s']} s)" if st else "-"


def _busy(r: dict) -> str:
    h = r.get("host") or {}
    if "busy_mean" not in h:
        return "-"
    return f"{h['busy_mean']:.0%} ({h['saturated']:.0%})"


if __name__ == "__main__":
    wrong = [r for r in main() if not r.get("as_declared", True)]
    if wrong:  # a judge must not be fast by failing: such a roster's rate is no measurement
        print(f"{len(wrong)} roster(s) did not get the declared verdicts", file=sys.stderr)
        sys.exit(1)
