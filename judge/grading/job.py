"""One judging job in a process of its own: ``python -m judge.grading.job [--workers N] [--pool SOCKET]`` reads a
job on stdin (``--workers``: the cases' workers, this job's share of the host; ``--pool``: the driver's worker
pool, judge.pool).

Why a process per job: a judge that crashes, leaks memory or hangs takes only
its own job with it; the driver records an IE for that job and carries on.
Why stdin and not the command line: the job's seed (derived from the course's
secret) must not show in ``ps`` or in /proc/<pid>/cmdline, which a submission
running under the process backend could read.

Job (JSON object on stdin): ``problem`` (id or slug), ``path``, ``seed``,
``device`` ("cpu"/"cuda"), ``interpret``, ``sandbox``, ``gpu`` (host index or
null); optional ``source`` (the file's text, base64) and ``filename`` for a
job whose file is not on this host (Ray, the grading service), and
``progress``: a file to append where the judging is to, one JSON object a
line (``{"group", "index", "groups"}`` as each test group starts, ``{"phase":
"timing"}`` before the speed run, ``{"wait": line}`` while it waits for the
GPU's lock), which the grading service streams to the student; ``max_examples``:
drawn cases per group instead of the spec's (``judge serve --max-examples``).
Reply: the judge's JSON report (version 1) on stdout, exit 0, whatever the
verdict; exit 2 with one line on stderr for a bad job; 3 for an internal error.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from judge.verdicts import Verdict

REPO_ROOT = Path(__file__).resolve().parents[2]

# The job children this process started and that still run: stop_children() ends them (a service that stops).
_children: set[subprocess.Popen] = set()
_children_lock = threading.Lock()


def stop_children() -> int:
    """Send SIGTERM to every job child of this process still running (each stops its sandboxed workers and
    exits; its run_subprocess returns an IE report). Returns how many were asked."""
    with _children_lock:
        procs = list(_children)
    for proc in procs:
        try:
            proc.send_signal(signal.SIGTERM)
        except (ProcessLookupError, OSError):
            pass
    return len(procs)


def ie_report(problem, message: str, elapsed: float = 0.0, interpret: bool | None = None) -> dict:
    """The report of a job that produced none (the judge crashed, timed out or was killed). ``interpret``:
    whether the job was to run in the interpreter (no speed points to earn there), when it is known."""
    pid = getattr(problem, "id", problem)
    report = {
        "version": 1,
        "verdict": Verdict.IE.value,
        "verdict_meaning": "internal error of the judge",
        "score": 0,
        "max_score": 100.0,
        "message": message,
        "details": {},
        "problem": {"id": pid},
        "groups": [],
        "speed": {"scored": False},
        "notes": [],
        "elapsed_seconds": round(elapsed, 3),
    }
    if interpret is not None:
        report["mode"] = {"interpret": bool(interpret)}
    return report


def spawn_job(
    *, gpu: int | None = None, workers: int | None = None, pool: str | None = None, nice: int = 0
) -> subprocess.Popen:
    """A child ``python -m judge.grading.job``, started now; it loads the judge and torch, then waits for its job
    on stdin (run_subprocess sends it). So a process started ahead of its job (Spares) has its start done when
    the job comes.

    With a GPU, the child sees only that GPU (CUDA_VISIBLE_DEVICES, in PCI bus
    order as the judge's workers use): the golden model, computed in the
    judge's own process on "cuda", then runs on the job's GPU too. ``workers``: the workers its cases are spread
    over (this job's share of the host; None: the job decides, judge.options.auto_workers). ``pool``: the
    socket of the driver's worker pool (judge.pool). ``nice``: how much nicer than this process the child runs,
    which the processes it starts for its job inherit (they start only once the job comes, after it is set).
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), *filter(None, [env.get("PYTHONPATH")])])
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = str(gpu)
        env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    argv = [sys.executable, "-m", "judge.grading.job"]
    if workers is not None:
        argv += ["--workers", str(workers)]
    if pool is not None:
        argv += ["--pool", pool]
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=str(REPO_ROOT),
    )
    if nice:
        with contextlib.suppress(OSError):  # (it may have died already: its job's report says so)
            os.setpriority(os.PRIO_PROCESS, proc.pid, min(19, os.getpriority(os.PRIO_PROCESS, 0) + nice))
    with _children_lock:
        _children.add(proc)
    return proc


class Spares:
    """Job processes started ahead of their jobs, waiting for each GPU (None: the CPU).

    A job's process spends its first seconds importing torch and the judge; a roster's jobs run one after another
    in each slot, so the local executor starts the next job's process when a job starts (:meth:`refill`) and hands
    it the job that takes the slot after it (:meth:`take`). A spare that gets no job is ended by :meth:`close`.
    Each spare is a fresh process that serves one job only, as any job's process."""

    def __init__(self, *, workers: int | None = None, pool: str | None = None, nice: int = 0):
        self.workers = workers
        self.pool = pool
        self.nice = nice
        self._ready: dict[int | None, list[subprocess.Popen]] = {}
        self._lock = threading.Lock()
        self.stats = {"taken": 0, "started": 0, "unused": 0}

    def take(self, gpu: int | None) -> subprocess.Popen | None:
        """A started process for a job on ``gpu`` (None when there is none)."""
        with self._lock:
            ready = self._ready.get(gpu) or []
            while ready:
                proc = ready.pop(0)
                if proc.poll() is None:
                    self.stats["taken"] += 1
                    return proc
                _forget(proc)  # it died waiting (killed from outside): start the job afresh
        return None

    def waiting(self, other_than: int | None) -> int:
        """How many started processes wait for a job on GPUs other than ``other_than``."""
        with self._lock:
            return sum(len(ready) for gpu, ready in self._ready.items() if gpu != other_than)

    def refill(self, gpu: int | None, want: int) -> None:
        """Start processes for ``gpu`` until ``want`` wait."""
        with self._lock:
            ready = self._ready.setdefault(gpu, [])
            while len(ready) < want:
                ready.append(spawn_job(gpu=gpu, workers=self.workers, pool=self.pool, nice=self.nice))
                self.stats["started"] += 1

    def close(self) -> None:
        """End every process still waiting for a job."""
        with self._lock:
            procs = [p for ready in self._ready.values() for p in ready]
            self._ready.clear()
        for proc in procs:
            self.stats["unused"] += 1
            try:
                proc.kill()
                proc.communicate(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass
            _forget(proc)


def _forget(proc: subprocess.Popen) -> None:
    with _children_lock:
        _children.discard(proc)


def run_subprocess(
    spec: dict,
    *,
    timeout: float,
    gpu: int | None = None,
    workers: int | None = None,
    pool: str | None = None,
    proc: subprocess.Popen | None = None,
    nice: int = 0,
) -> dict:
    """Run one job in a child ``python -m judge.grading.job`` (spawn_job's; ``proc``: one started ahead with the
    same ``gpu``, ``workers`` and ``pool``); always returns a report (IE on failure)."""
    if gpu is not None:
        spec = dict(spec, gpu=gpu)
    started = time.monotonic()
    proc = proc or spawn_job(gpu=gpu, workers=workers, pool=pool, nice=nice)
    try:
        try:
            stdout, stderr = proc.communicate(json.dumps(spec), timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            return ie_report(
                spec.get("problem"),
                f"the judging job did not finish within {timeout:g} s",
                time.monotonic() - started,
                spec.get("interpret"),
            )
    finally:
        with _children_lock:
            _children.discard(proc)
    if proc.returncode == 0:
        try:
            report = json.loads(stdout)
            if isinstance(report, dict) and "verdict" in report:
                return report
        except json.JSONDecodeError:
            pass
    tail = (stderr.strip().splitlines() or ["(nothing on stderr)"])[-1][:300]
    return ie_report(
        spec.get("problem"),
        f"the judging job failed (exit {proc.returncode}): {tail}",
        time.monotonic() - started,
        spec.get("interpret"),
    )


def platform_report(
    problem,
    directory: Path,
    rubric,
    *,
    missing: str,
    sandbox: str,
    device: str,
    forward: str | None,
    token: str | None,
    seed: int | None,
    timeout: float,
    forward_hint: str = "",
) -> dict:
    """The report for a grading platform's one submission in DIRECTORY (Gradescope, PrairieLearn): CE
    with MISSING when no file was found, else judged by the GPU service at FORWARD, else judged here;
    with the rubric's seed for hidden runs unless SEED is given."""
    from judge.grading.roster import pick_file

    path = pick_file(directory, problem, single_problem=True) if directory.is_dir() else None
    if seed is None:
        seed = rubric.seed_for(problem)
    if path is None:
        report = ie_report(problem.id, "", interpret=device == "cpu" and not forward)
        report.update(verdict=Verdict.CE.value, message=missing)
        return report
    if forward:
        from judge.grading.forward_client import ForwardError, post_submission

        try:
            return post_submission(forward, problem.id, path, seed, token, timeout=timeout)
        except ForwardError as exc:
            return ie_report(problem.id, f"{exc}{forward_hint}")
    if seed is None:
        seed = int.from_bytes(os.urandom(4), "big") >> 1
    return run_subprocess(
        {
            "problem": problem.id,
            "path": str(path.resolve()),
            "seed": seed,
            "device": device,
            "interpret": device == "cpu",
            "sandbox": sandbox,
        },
        timeout=timeout,
    )


def _die_with_parent() -> None:
    """Ask Linux for SIGTERM when the driver dies, so a killed `grade` leaves no judging behind."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _progress_writer(path):
    """A callable appending each progress event to the file PATH as a JSON line (None without a PATH)."""
    if not path:
        return None
    lock = threading.Lock()

    def write(event: dict) -> None:
        try:
            with lock, open(path, "a", encoding="utf-8") as f:
                f.write(json.dumps(event) + "\n")
        except OSError:
            pass  # progress is a courtesy: judging goes on without it

    return write


def _preload() -> None:
    """Import what every job needs before the job is read: a process started ahead of its job (Spares) has
    done it by the time the job comes. Nothing here reads the job or touches a GPU."""
    try:
        import torch  # noqa: F401 - the golden models, the wire

        import judge.judging  # noqa: F401
        import judge.session  # noqa: F401
    except ImportError:
        pass  # the job's own imports say what is missing


def _fail(code: int, message: str):
    print(f"judge: {message}", file=sys.stderr)
    sys.exit(code)


def _arguments() -> tuple[int | None, str | None]:
    """``--workers N`` and ``--pool SOCKET`` from the command line (spawn_job's)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m judge.grading.job")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--pool", default=None)
    args = parser.parse_args()
    return args.workers, args.pool


def main() -> None:
    workers, pool = _arguments()
    parent = os.getppid()
    _die_with_parent()
    # SIGTERM unwinds (SystemExit) so the session's finally stops its worker.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if os.getppid() != parent:  # the driver died before the death signal was armed
        sys.exit(143)
    _preload()
    try:
        spec = json.loads(sys.stdin.read())
        if not isinstance(spec, dict):
            raise ValueError("not an object")
    except ValueError as exc:
        _fail(2, f"bad job: {exc}")

    from judge.judging import judge_file
    from judge.options import Options
    from judge.pool.client import use
    from judge.problems import find_problem
    from judge.report import finite_json

    problem = find_problem(str(spec.get("problem", "")))
    if problem is None:
        _fail(2, f"bad job: unknown problem '{spec.get('problem')}'")
    tmp = None
    path = Path(str(spec.get("path", "")))
    if spec.get("source") is not None and not path.is_file():
        # The file is not on this host: write the bytes that came with the job, under the student's file name.
        tmp = tempfile.mkdtemp(prefix="judge-job-")
        path = Path(tmp) / Path(str(spec.get("filename") or path.name or f"submission{problem.suffix}")).name
        path.write_bytes(base64.b64decode(spec["source"]))
    if not path.is_file():
        _fail(2, f"bad job: no such file: {path}")
    device = spec.get("device", "cpu")
    max_examples = spec.get("max_examples")
    if max_examples is not None and (not isinstance(max_examples, int) or max_examples < 1):
        _fail(2, f"bad job: max_examples must be a whole number >= 1 (got {max_examples!r})")
    progress = _progress_writer(spec.get("progress"))
    from judge.progress import Events

    options = Options(
        device=device,
        interpret=bool(spec.get("interpret", device == "cpu")),
        sandbox=str(spec.get("sandbox", "auto")),
        seed=int(spec.get("seed", 0)),
        gpu=spec.get("gpu"),
        progress=Events(progress) if progress else None,
        max_examples=max_examples,
        log=(lambda line: progress({"wait": str(line)})) if progress else None,
        workers=workers,
    )
    use(pool)
    from judge import timeline

    timeline.start()  # the timeline setting (a folder: a file per job): where this job's time went
    try:
        report = judge_file(problem, path, options)
        out = finite_json(report.to_json())
        # A grading report goes to students and platforms: it names the student's file, never a path of this
        # host (the roster's folder, a temporary copy).
        name = Path(str(spec.get("filename") or spec.get("path") or path.name)).name
        out = json.loads(json.dumps(out).replace(json.dumps(str(path))[1:-1], json.dumps(name)[1:-1]))
        out["submission"]["path"] = name
        sys.stdout.write(json.dumps(out))
    except Exception as exc:  # noqa: BLE001 - one line; the driver records IE
        from judge.cli_common import internal_error

        _fail(3, internal_error(exc))
    finally:
        timeline.write()
        if tmp is not None:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
