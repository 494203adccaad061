"""What every command does with a submission before a worker starts: read it, scan it, pick the sandbox.

``submit``, ``test`` and ``bench`` share this intake, so a file that ``submit``
rejects cannot be timed by ``bench``. Reading and parsing source is not
importing it: nothing here runs the submission. Nothing here imports torch
either: the command line answers a refused file (:func:`refused_report`)
before torch is loaded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from judge import precheck, staticscan
from judge.shared import kernel_source
from judge.verdicts import Verdict


@dataclass(frozen=True)
class Refusal:
    """The submission was judged from its source alone: CE (not a Python file) or RJ (the static scan)."""

    verdict: Verdict
    message: str
    details: dict = field(default_factory=dict)


def check_source(
    path: Path,
    static_scan: bool = True,
    *,
    entry: str | None = None,
    arity: int | None = None,
    allow: tuple[str, ...] = (),
) -> Refusal | None:
    """CE for a file that is no Python source (size, empty, binary, UTF-8, syntax), RJ for what the static scan
    finds, CE for an entry point that is certainly missing or takes the wrong arguments (``entry`` and
    ``arity`` given: judge.precheck.entry_point); None when the file goes on to a worker. ``allow``: the
    static-scan rules the problem lifts (Problem.scan_allow)."""
    reason, _line = precheck.check_source(path)
    if reason:
        return Refusal(Verdict.CE, reason)
    text = kernel_source.read_source(path)
    impure = _impure_constexpr_functions(text)
    if impure is not None:
        return impure
    if static_scan:
        findings = staticscan.scan(text, allow)
        if findings:
            more = f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""
            return Refusal(
                Verdict.RJ,
                f"not allowed in a submission: {findings[0].message()}{more}",
                {"findings": [{"line": f.line, "code": f.code, "why": f.why} for f in findings]},
            )
    if entry:
        missing = precheck.entry_point(text, path.name, entry, arity or 0)
        if missing is not None:
            kind, message, line = missing
            # The same details as the worker's own refusal of the file (judge.untrusted.runner).
            return Refusal(
                Verdict.CE,
                message,
                {
                    "error": {
                        "category": "compile",
                        "type": kind,
                        "message": message,
                        "line": line,
                        "code": "",
                        "frames": [],
                        "fatal": False,
                        "at_import": False,
                    }
                },
            )
    return None


def _impure_constexpr_functions(text: str) -> Refusal | None:
    """RJ for a @triton.constexpr_function that is not a pure function of its arguments (judge.shared.kernel_source:
    the replay check relies on it computing the same in the judged worker and replayed alone)."""

    try:
        impure = kernel_source.extract(text).impure
    except (SyntaxError, ValueError, RecursionError):
        return None  # the worker reports it
    if not impure:
        return None
    line, name, why = impure[0]
    more = f" (and {len(impure) - 1} more)" if len(impure) > 1 else ""
    return Refusal(
        Verdict.RJ,
        f"the constexpr function {name} must be a pure function of its arguments and the "
        f"file's constants; line {line}: {why}{more}",
        {"findings": [{"line": ln, "code": f"constexpr function {n}", "why": w} for ln, n, w in impure]},
    )


def refused_report(problem, submission: Path, refusal: Refusal, *, groups, mode: dict, seed: int, elapsed: float):
    """The report of a file refused from its source alone, built without a worker, a sandbox or torch.

    The same report a Session gives such a file (judge.session), except that
    nothing ran anywhere: no timing, no worker, no sandbox notes. ``groups``:
    the groups the run would have run (judge.problems.Group).
    """
    import hashlib

    from judge.verdicts import GroupResult, Report

    data = submission.read_bytes() if submission.is_file() else b""
    return Report(
        problem={"id": problem.id, "slug": problem.slug, "title": problem.title},
        submission={"path": str(submission), "sha256": hashlib.sha256(data).hexdigest()},
        mode=mode,
        seed=seed,
        verdict=refusal.verdict,
        message=refusal.message,
        groups=[
            GroupResult(g.name, g.about, g.points, False, 0, refusal.verdict, skipped="not run: " + refusal.message)
            for g in groups
        ],
        notes=[],
        max_score=100.0,
        speed={
            "scored": False,
            "points": 0,
            "max_points": problem.speed_points,
            "reason": f"not measured: {refusal.verdict.value} before the speed run",
        },
        elapsed_seconds=elapsed,
        details=dict(refusal.details),
    )


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
    its own (judge.replay). The cache root is judge.settings' ``cache_dir``
    (judge.timing.ceilings.cache_dir).
    """
    if interpret or device != "cuda":
        return None  # the interpreter compiles nothing
    import hashlib

    from judge.timing.ceilings import cache_dir

    digest = hashlib.sha256(submission.read_bytes()).hexdigest()
    return cache_dir() / "kernels" / digest[:40]
