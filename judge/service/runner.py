"""The service's queue: jobs claimed from the grading store, judged by ``judge grade``'s executors.

One thread (the driver) runs the executor over an endless source of jobs: the
source claims the next queued job in the store (marking it running) only
when the executor has a free slot (Ray: whenever there is one), and the
executor calls back in the same thread as each job ends; that thread alone
finishes jobs. Request threads only add jobs and read.

What a restart keeps: everything is in the store. A job is queued, running
or done; finishing one is a single transaction guarded by its status (so a
job is finished exactly once, its result row written once); a service that
starts finds the jobs it left running (it was killed mid-job) and queues them
again, ahead of nothing else: they keep their place. A job started
``max_attempts`` times without finishing (a job that brings the service
down every time) is finished as an IE instead of being tried forever.

A job submitted again with the same file (same student, problem and bytes)
is not judged again: it is finished with the stored report (``cached``).
A regrade (``Store.regrade``) queues a problem's finished jobs again; they
are judged by the judge as it is now, and their results replace the rows of
earlier rounds.

Progress: each job's child appends where it is (the test group, the speed
run) to ``STATE/progress/ID.jsonl``; ``progress()`` reads the last line.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from pathlib import Path

from judge.grading.job import ie_report
from judge.grading.rubric import grade
from judge.problems import find_problem
from judge.verdicts import Verdict


class Runner:
    def __init__(
        self,
        store,
        executor,
        *,
        device: str,
        sandbox: str,
        seeds: dict[int, int],
        rubric,
        state: Path,
        max_attempts: int = 3,
        max_examples: int | None = None,
        log=print,
    ):
        self.store = store
        self.executor = executor
        self.device = device
        self.sandbox = sandbox
        self.seeds = seeds
        self.rubric = rubric
        self.progress_dir = Path(state) / "progress"
        self.progress_dir.mkdir(parents=True, exist_ok=True)
        self.max_attempts = max_attempts
        self.max_examples = max_examples  # drawn cases per group for every job (None: each spec's own)
        self.log = log
        self.wake = threading.Event()
        self.stopping = threading.Event()
        self.thread: threading.Thread | None = None
        self._inflight: dict[str, dict] = {}  # job id -> its claimed row (without the source)
        self.finished = 0  # jobs this process finished (judged or cached)

    # ------------------------------------------------------------------ life

    def recover(self) -> dict:
        """Queue again the jobs a previous run left running; finish as IE those started too often."""
        left = self.store.requeue_running()
        gave_up = []
        for job in left:
            if job["attempts"] >= self.max_attempts:
                report = ie_report(
                    job["problem"],
                    f"the judging was started {job['attempts']} times and the "
                    "service stopped each time; not tried again",
                    interpret=self.device == "cpu",
                )
                report["submission"] = {"path": job["filename"], "sha256": job["sha256"]}
                if self.store.finish_job(job["id"], report):
                    gave_up.append(job["id"])
        if left:
            self.log(
                f"restart: {len(left) - len(gave_up)} job(s) left running were queued again"
                + (f", {len(gave_up)} given up (IE)" if gave_up else "")
            )
        return {"requeued": len(left) - len(gave_up), "gave_up": len(gave_up)}

    def start(self) -> None:
        self.thread = threading.Thread(target=self._drive, name="judge-runner", daemon=True)
        self.thread.start()

    def notify(self) -> None:
        """A job was added: claim it now rather than at the next look."""
        self.wake.set()

    def stop(self, timeout: float = 30) -> None:
        """Stop claiming, end the jobs in flight (left running in the store: the next start queues them
        again) and wait for the driver."""
        self.stopping.set()
        self.wake.set()
        self.executor.stop()
        if self.thread is not None:
            self.thread.join(timeout)

    def alive(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    # ------------------------------------------------------------------ the driver

    def _drive(self) -> None:
        while not self.stopping.is_set():
            try:
                self.executor.run(self._source(), self._on_result)
            except Exception as exc:  # noqa: BLE001 - the service keeps serving; the jobs are queued again
                self.log(f"the executor failed: {type(exc).__name__}: {exc}; its jobs are queued again")
                self._inflight.clear()
                if not self.stopping.is_set():
                    self.store.requeue_running()
                    time.sleep(1)

    def _source(self):
        while not self.stopping.is_set():
            job = self.store.claim_job()
            if job is None:
                self.wake.wait(0.25)
                self.wake.clear()
                yield None
                continue
            item = self._prepare(job)
            if item is not None:
                yield item
            else:
                yield None  # finished at once (a cached result): let the executor deliver what ended

    def _prepare(self, job: dict):
        """The executor's (key, spec) for a claimed job, or None when it was finished without judging."""
        problem = find_problem(str(job["problem"]))
        if problem is None:  # the problem was removed since: nothing to judge it with
            self._finish(job, ie_report(job["problem"], f"problem {job['problem']} is no longer served"))
            return None
        own_seed = job["seed"] is not None
        if not own_seed:
            # A regrade judges afresh: only a result of the same round (an identical file judged in it) is reused.
            stored = self.store.result_for(job["student"], job["problem"], job["sha256"], job.get("regrade") or 0)
            if stored is not None:
                self._finish(job, stored["report"], cached=True)
                return None
        progress = self.progress_dir / f"{job['id']}.jsonl"
        progress.write_text("")  # a job started again starts its progress again
        spec = {
            "problem": problem.id,
            "source": base64.b64encode(job["source"]).decode(),
            "filename": job["filename"],
            "seed": job["seed"] if own_seed else self.seeds[problem.id],
            "device": self.device,
            "interpret": self.device == "cpu",
            "sandbox": self.sandbox,
            "progress": str(progress),
        }
        if self.max_examples is not None:
            spec["max_examples"] = self.max_examples
        self._inflight[job["id"]] = {k: v for k, v in job.items() if k != "source"}
        return job["id"], spec

    def _on_result(self, job_id: str, report: dict) -> None:
        job = self._inflight.pop(job_id, None) or self.store.job(job_id, source=True)
        if self.stopping.is_set() and report.get("verdict") == Verdict.IE:
            return  # ended by the stop, most likely: left running, judged again at the next start
        self._finish(job, report)

    def _finish(self, job: dict, report: dict, cached: bool = False) -> None:
        problem = find_problem(str(job["problem"]))
        report = dict(report)
        report["submission"] = {**(report.get("submission") or {}), "path": job["filename"], "sha256": job["sha256"]}
        result = None
        if problem is not None and not cached and job.get("seed") is None:
            # Judged with the store's seed: the course's record (as `judge grade` writes it). A job judged with
            # a seed its client chose (a --forward platform with its own rubric) is kept with the job only.
            result = (grade(report, problem, self.rubric), job["filename"])
        if self.store.finish_job(job["id"], report, result, cached=cached):
            self.finished += 1
            elapsed = report.get("elapsed_seconds")
            self.log(
                f"job {job['id']} ({job['student']}, problem {job['problem']}): {report.get('verdict')}"
                + (
                    " (an identical earlier submission's result)"
                    if cached
                    else f" in {elapsed:g} s"
                    if isinstance(elapsed, (int, float))
                    else ""
                )
            )
        try:
            (self.progress_dir / f"{job['id']}.jsonl").unlink()
        except OSError:
            pass

    # ------------------------------------------------------------------ progress

    def progress(self, job_id: str) -> dict | None:
        """The last thing the running job's child said about where it is, or None."""
        path = self.progress_dir / f"{job_id}.jsonl"
        try:
            with open(path, "rb") as f:
                f.seek(0, 2)
                size = f.tell()
                f.seek(max(0, size - 4096))
                lines = f.read().decode("utf-8", "replace").strip().splitlines()
        except OSError:
            return None
        for line in reversed(lines):
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                return event
        return None
