"""``python -m judge bench ID FILE``: the speed run alone, without the correctness tests.

The source checks of ``submit`` (size, syntax, the entry point, the static
scan) still apply, and the outputs of timed calls are still checked, so a
wrong or cheating kernel does not get a speed; but only ``submit`` gives
points. A file refused from its source is answered by :func:`refused`
before torch is imported (the command line calls it first).
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
import time
from pathlib import Path

from judge import intake
from judge.options import Options, limits_for
from judge.verdicts import Verdict


def _report(problem, submission: Path, options: Options, sandbox: str, notes: list[str]) -> dict:
    data = submission.read_bytes() if submission.is_file() else b""
    return {
        "version": 1,
        "problem": {"id": problem.id, "slug": problem.slug, "title": problem.title},
        "submission": {"path": str(submission), "sha256": hashlib.sha256(data).hexdigest()},
        "mode": {"device": options.device, "interpret": options.interpret, "sandbox": sandbox},
        "notes": notes,
    }


def _done(
    report: dict, started: float, verdict: Verdict, message: str, speed: dict | None = None, details=None
) -> dict:
    report.update(
        verdict=Verdict(verdict).value,
        message=message,
        speed=speed or {},
        details=details or {},
        elapsed_seconds=round(time.monotonic() - started, 3),
    )
    return report


def refused(problem, submission: Path, options: Options) -> dict | None:
    """The report of a file refused from its source alone (CE or RJ), or None; no worker, no sandbox, no torch
    (the sandbox is the one asked for, "none" for auto: nothing ran)."""
    started = time.monotonic()
    refusal = intake.check_source(
        submission, entry=problem.entry_point, arity=problem.entry_arity, allow=problem.scan_allow
    )
    if refusal is None:
        return None
    report = _report(problem, submission, options, options.sandbox if options.sandbox != "auto" else "none", [])
    return _done(report, started, refusal.verdict, refusal.message, details=refusal.details)


def bench(problem, submission: Path, options: Options) -> dict:
    """A report dict: version, verdict ("AC" when measured), message, problem, submission, mode, speed."""
    from judge.gpu_claim import GpuClaim, Refused
    from judge.timing.findings import BenchFailed
    from judge.timing.speedrun import SpeedRun, config_for

    started = time.monotonic()
    found = refused(problem, submission, options)
    if found is not None:
        return found
    backend, note = intake.backend_for(options.sandbox, options.device)
    report = _report(problem, submission, options, backend.name, [note] if note else [])
    scratch = Path(tempfile.mkdtemp(prefix="judge-bench-"))
    limits = limits_for(problem, options)
    config = config_for(problem, interpret=options.interpret, overrides=options.bench)
    # Its workers' memory, reserved with every other judge's on this GPU (judge.gpu_admission).
    claim = GpuClaim(
        options, limits, speed=True, speed_replays=1, baseline=config.torch_baseline, progress=options.progress
    )
    try:
        runner = SpeedRun(
            problem,
            submission,
            device=options.device,
            interpret=options.interpret,
            gpu=options.gpu,
            backend=backend,
            limits=limits,
            scratch=scratch,
            config=config,
            log=options.log,
            progress=options.progress,
        )
        try:
            claim.to_speed(runner)
        except Refused as exc:
            return _done(report, started, Verdict.IE, f"the GPU cannot hold this speed run: {exc}")
        report["timing"] = {"gpu_admission_wait_seconds": round(claim.waited_seconds, 3)}
        try:
            speed = runner.run()
        except BenchFailed as exc:
            return _done(report, started, exc.verdict, exc.message, details=exc.details)
    finally:
        claim.release()
        shutil.rmtree(scratch, ignore_errors=True)
    message = (
        f"{speed['geomean_speedup']:.3f}x the reference's speed (geometric mean over {len(speed['shapes'])} shapes)"
    )
    return _done(report, started, Verdict.AC, message, speed)
