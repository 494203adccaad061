"""What every command does with a submission before a worker starts: read it, scan it, pick the sandbox.

``submit``, ``test`` and ``bench`` share this intake, so a file that ``submit``
rejects cannot be timed by ``bench``. Reading and parsing source is not
importing it: nothing here runs the submission.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from judge import precheck, staticscan
from judge.verdicts import Verdict


@dataclass(frozen=True)
class Refusal:
    """The submission was judged from its source alone: CE (not a Python file) or RJ (the static scan)."""

    verdict: Verdict
    message: str
    details: dict = field(default_factory=dict)


def check_source(path: Path, static_scan: bool = True) -> Refusal | None:
    reason, _line = precheck.check_source(path)
    if reason:
        return Refusal(Verdict.CE, reason)
    if static_scan:
        findings = staticscan.scan(path.read_text())
        if findings:
            more = f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""
            return Refusal(Verdict.RJ, f"not allowed in a submission: {findings[0].message()}{more}",
                           {"findings": [{"line": f.line, "code": f.code, "why": f.why} for f in findings]})
    return None


def backend_for(name: str, device: str):
    """(the sandbox backend, a note for the report or None); ``auto`` picks the best one available."""
    from judge.sandbox import choose_auto, get_backend

    if name == "auto":
        return choose_auto(device)
    return get_backend(name), None


def kernel_cache(submission: Path, device: str, interpret: bool) -> Path | None:
    """Where this submission's compiled kernels are kept: a directory of its content's own (GPU only).

    Every worker of the same file (the parallel workers, the speed run's, a
    re-submission of the same bytes) shares it, so each kernel variant is
    compiled once; a file of other bytes never sees it, so no submission can
    plant a compiled kernel that another would load. The replay worker keeps
    its own (judge.replay). ``JUDGE_CACHE_DIR`` moves the root
    (judge.timing.ceilings.cache_dir).
    """
    if interpret or device != "cuda":
        return None  # the interpreter compiles nothing
    import hashlib

    from judge.timing.ceilings import cache_dir

    digest = hashlib.sha256(submission.read_bytes()).hexdigest()
    return cache_dir() / "kernels" / digest[:40]
