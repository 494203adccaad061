"""``python -m judge bench ID FILE``: the speed run alone, without the correctness tests.

The source checks of ``submit`` (size, syntax, the static scan) still apply,
and the outputs of timed calls are still checked, so a wrong or cheating
kernel does not get a speed; but only ``submit`` gives points.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
import time
from pathlib import Path

from judge import intake
from judge.options import Options, limits_for
from judge.timing.speedrun import BenchFailed, SpeedRun, config_for


def bench(problem, submission: Path, options: Options) -> dict:
    """A report dict: version, verdict ("AC" when measured), message, problem, submission, mode, speed."""
    started = time.monotonic()
    backend, note = intake.backend_for(options.sandbox, options.device)
    notes = [note] if note else []
    data = submission.read_bytes() if submission.is_file() else b""
    report = {"version": 1, "problem": {"id": problem.id, "slug": problem.slug, "title": problem.title},
              "submission": {"path": str(submission), "sha256": hashlib.sha256(data).hexdigest()},
              "mode": {"device": options.device, "interpret": options.interpret, "sandbox": backend.name},
              "notes": notes}

    def done(verdict: str, message: str, speed: dict | None = None, details=None) -> dict:
        report.update(verdict=verdict, message=message, speed=speed or {}, details=details or {},
                      elapsed_seconds=round(time.monotonic() - started, 3))
        return report

    refusal = intake.check_source(submission)
    if refusal is not None:
        return done(refusal.verdict.value, refusal.message, details=refusal.details)
    scratch = Path(tempfile.mkdtemp(prefix="judge-bench-"))
    try:
        runner = SpeedRun(problem, submission, device=options.device, interpret=options.interpret, gpu=options.gpu,
                       backend=backend, limits=limits_for(problem, options), scratch=scratch,
                       config=config_for(problem, interpret=options.interpret, overrides=options.bench),
                       log=options.log)
        try:
            speed = runner.run()
        except BenchFailed as exc:
            return done(exc.verdict, exc.message, details=exc.details)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    message = f"{speed['geomean_speedup']:.3f}x the reference's speed (geometric mean over {len(speed['shapes'])} shapes)"
    return done("AC", message, speed)
