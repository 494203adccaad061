"""``judge grade``: a roster judged in parallel into the store, then reports, CSV and a summary.

Order of work: read the roster (every file hashed), open the store, judge only
what the store does not hold yet, record each result as it arrives, then write
the exports from the store (so they also cover earlier, interrupted runs).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from judge.grading.course_record import CourseRecord
from judge.grading.job import ie_report
from judge.grading.roster import Entry, candidate_names
from judge.grading.rubric import Rubric, grade, student_view
from judge.grading.standings import best_rows, write_csv
from judge.grading.store import Store
from judge.problems import Problem
from judge.verdicts import Verdict


class GradeError(Exception):
    """Grading cannot go ahead (e.g. the store was filled with other seeds): usage error, one line."""


@dataclass
class Plan:
    entries: list[Entry]
    problems: list[Problem]
    out: Path
    rubric: Rubric
    device: str  # "cpu" (interpreter) or "cuda"
    sandbox: str
    executor: object  # LocalExecutor or RayExecutor
    seed: int | None = None  # --seed; else the rubric's secret; else one drawn and kept in the store
    csv_path: Path | None = None
    progress: bool = True
    root: Path | None = None  # the roster's folder: stored paths are relative to it (no host path in the exports)
    counts: dict = field(default_factory=dict)


def missing_report(entry: Entry, interpret: bool | None = None) -> dict:
    """The report of a student with no file for a problem: a compile error, scored 0, not judged."""
    names = ", ".join(candidate_names(entry.problem))
    report = ie_report(entry.problem.id, "", interpret=interpret)
    report.update(
        verdict=Verdict.CE.value,
        verdict_meaning="compile error",
        message=f"no submission for problem {entry.problem.id} ({entry.problem.slug}); looked for {names}",
        problem={"id": entry.problem.id, "slug": entry.problem.slug, "title": entry.problem.title},
        submission={"path": None, "sha256": "missing"},
    )
    return report


def shown_path(path: Path | None, root: Path | None) -> str | None:
    """A submission's path as the store and the CSV keep it: relative to the roster's folder (the file's name
    when it lies elsewhere), so that no export names a folder of the grading host."""
    if path is None:
        return None
    if root is not None:
        try:
            return str(Path(path).resolve().relative_to(Path(root).resolve()))
        except ValueError:
            pass
    return Path(path).name


def _seeds(plan: Plan, store: Store) -> dict[int, int]:
    return problem_seeds(store, plan.problems, plan.rubric, plan.seed)


def problem_seeds(store: Store, problems: list[Problem], rubric: Rubric, seed: int | None = None) -> dict[int, int]:
    """The judge seed of each problem's graded runs in this store: SEED, else the rubric's secret's, else one
    drawn once per store (shared by ``judge grade`` and ``judge serve`` on the same store); GradeError when the
    store already holds results judged with other seeds."""
    seeds = {}
    for p in problems:
        if seed is not None:
            seeds[p.id] = seed
        elif rubric.secret_seed is not None:
            seeds[p.id] = rubric.seed_for(p)
        else:
            # No secret: one random seed per store, kept so a resumed run draws the same cases.
            drawn = store.set_meta_once("random_seed", str(int.from_bytes(os.urandom(4), "big") >> 1))
            seeds[p.id] = int(drawn)
    # Results judged with other cases must not mix with these: refuse, without telling the seeds.
    for p in problems:
        mark = hashlib.sha256(f"{seeds[p.id]}".encode()).hexdigest()[:16]
        if store.set_meta_once(f"seed_mark:{p.id}", mark) != mark:
            raise GradeError(
                f"{store.path} holds results for problem {p.id} judged with another seed "
                "(the rubric's secret or --seed changed): grade into a new --out directory"
            )
    return seeds


def run(plan: Plan, console) -> dict:
    """Judge what is not done; returns the summary (also written to OUT/summary.json)."""
    store = Store(plan.out / "results.sqlite")
    try:
        seeds = _seeds(plan, store)
        done = store.done_keys()
        todo, seen = [], set()
        skipped = 0
        for entry in plan.entries:
            if entry.key in done or entry.key in seen:
                skipped += entry.key in done
                continue
            seen.add(entry.key)
            if entry.path is None:
                _record(store, plan, entry, missing_report(entry, plan.device == "cpu"))
                continue
            todo.append(entry)
        by_key = {e.key: e for e in todo}
        jobs = [
            (
                e.key,
                {
                    "problem": e.problem.id,
                    "path": str(e.path.resolve()),
                    "seed": seeds[e.problem.id],
                    "device": plan.device,
                    "interpret": plan.device == "cpu",
                    "sandbox": plan.sandbox,
                },
            )
            for e in todo
        ]
        started = time.monotonic()
        failed = 0
        waits = []  # the jobs' seconds waited for their GPU's memory
        progress = _progress(console, plan.progress)
        with progress:
            bar = progress.add_task(f"grading ({plan.executor.name})", total=len(jobs))

            def on_result(key, report):
                nonlocal failed
                entry = by_key[key]
                _record(store, plan, entry, report)
                failed += report.get("verdict") == Verdict.IE
                if (report.get("timing") or {}).get("gpu_admission_wait_seconds"):
                    waits.append(float(report["timing"]["gpu_admission_wait_seconds"]))
                progress.advance(bar)

            if jobs:
                plan.executor.run(jobs, on_result)
        seconds = time.monotonic() - started
        summary = summarize(store, plan.rubric)
        summary["run"] = {
            "judged": len(jobs),
            "already_done": skipped,
            "internal_errors": failed,
            "seconds": round(seconds, 2),
            "executor": plan.executor.name,
            "per_hour": round(len(jobs) / seconds * 3600, 1) if jobs and seconds > 0 else None,
        }
        pool = getattr(plan.executor, "pool_stats", None)
        if pool is not None:  # the worker pool (judge.pool): workers handed out, jobs that started their own ...
            summary["run"]["pool"] = pool
        spares = getattr(plan.executor, "spare_stats", None)
        if spares is not None:  # job processes started ahead of their jobs (judge.grading.job.Spares)
            summary["run"]["job_spares"] = spares
        if waits:  # on GPUs: the jobs' waits for their GPU's memory (judge.gpu_admission)
            summary["run"]["gpu_admission"] = {"waited": len(waits), "seconds": round(sum(waits), 1)}
        export(store, plan)
        (plan.out / "summary.json").write_text(json.dumps(summary, indent=2))
        return summary
    finally:
        store.close()


def _progress(console, enabled: bool):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=not enabled,
        transient=False,
    )


def _record(store: Store, plan: Plan, entry: Entry, report: dict) -> None:
    graded = grade(report, entry.problem, plan.rubric)
    store.put(entry.student, entry.problem.id, entry.sha256, shown_path(entry.path, plan.root), report, graded)


# ---------------------------------------------------------------------- exports


def export(store: Store, plan: Plan) -> None:
    best = best_rows(store, plan.rubric)
    reports = plan.out / "reports"
    reports.mkdir(parents=True, exist_ok=True)
    students: dict[str, list[dict]] = {}
    for (student, _pid), row in sorted(best.items()):
        students.setdefault(student, []).append(row)
    now = dt.datetime.now(dt.UTC)
    record = CourseRecord(store)
    for student, rows in students.items():
        deadline = record.deadline_of(student, plan.rubric.deadline)  # an extension staff gave in judge serve
        views = [student_view(r["graded"], plan.rubric, now, deadline) for r in rows]
        doc = {
            "student": student,
            "deadline_passed": plan.rubric.past_deadline(now, deadline),
            "score": round(sum(v["score"] for v in views), 2),
            "max_score": round(sum(v["max_score"] for v in views), 2),
            "problems": views,
        }
        tmp = reports / f".{student}.json.tmp"
        tmp.write_text(json.dumps(doc, indent=2))
        tmp.replace(reports / f"{student}.json")  # never a half-written report
    if plan.csv_path is not None:
        write_csv(best, plan.csv_path)


def summarize(store: Store, rubric: Rubric) -> dict:
    best = best_rows(store, rubric)
    problems: dict[int, dict] = {}
    for (student, pid), row in sorted(best.items()):
        g = row["graded"]
        p = problems.setdefault(
            pid,
            {
                "problem": pid,
                "slug": g["problem"]["slug"],
                "students": 0,
                "verdicts": Counter(),
                "histogram": [0] * 10,
                "scores": [],
                "fastest": [],
            },
        )
        p["students"] += 1
        p["verdicts"][g["verdict"]] += 1
        fraction = g["score"] / g["max_score"] if g["max_score"] else 0.0
        p["histogram"][min(int(fraction * 10), 9)] += 1
        p["scores"].append(g["score"])
        if isinstance(row["speedup"], (int, float)):
            p["fastest"].append({"student": student, "speedup": row["speedup"], "verdict": g["verdict"]})
    out = []
    for p in problems.values():
        p["verdicts"] = dict(sorted(p["verdicts"].items()))
        p["mean_score"] = round(sum(p["scores"]) / len(p["scores"]), 2) if p["scores"] else 0.0
        p["fastest"] = sorted(p["fastest"], key=lambda x: -x["speedup"])[:5]
        del p["scores"]
        out.append(p)
    return {"problems": out}


def render_summary(summary: dict, console) -> None:
    from rich.markup import escape

    for p in summary["problems"]:
        verdicts = ", ".join(f"{v} {n}" for v, n in p["verdicts"].items())
        console.print(
            f"[bold]problem {p['problem']} {escape(p['slug'])}[/bold]: {p['students']} students, "
            f"mean score {p['mean_score']:g}; {verdicts}"
        )
        peak = max(p["histogram"]) or 1
        for i, n in enumerate(p["histogram"]):
            label = f"{i * 10:>3}-{(i + 1) * 10 if i < 9 else 100}%"
            console.print(f"  {label:>8} {'#' * round(20 * n / peak):<20} {n}")
        if p["fastest"]:
            console.print(
                "  fastest: "
                + ", ".join(f"{escape(f['student'])} {f['speedup']:.2f}x ({f['verdict']})" for f in p["fastest"])
            )
        else:
            console.print("  fastest: no speed data (speed is not measured in this run)")
    r = summary.get("run")
    if r:
        rate = f", {r['per_hour']:g} submissions/hour" if r.get("per_hour") else ""
        console.print(
            f"judged {r['judged']} now ({r['already_done']} already done) in {r['seconds']:g} s"
            f"{rate}; internal errors: {r['internal_errors']}"
        )
