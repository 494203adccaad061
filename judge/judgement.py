"""Judging one reply: a parsed worker reply and the judge's own answers in, an Outcome out.

Pure: no worker, no process, no I/O, so every path is unit-tested on
hand-made records (tests/test_judgement.py). The order of the checks is the
rulebook's (judge.rules): an exception the worker reported decides first; then
the anti-cheat rules over the call's evidence; then the values
(judge.rules.outputs); then, for right values, where they came from.
"""

from __future__ import annotations

import torch

from judge import rules
from judge.replies.records import CaseError, CaseResult, ErrorInfo
from judge.rules import outputs as output_rules
from judge.shared import oom
from judge.verdicts import Outcome, Verdict

NOT_A_KERNEL_ERROR = (
    "SyntaxError",
    "MissingEntryPoint",
    "BadEntryPoint",
    "WrongArity",
    "ModuleNotFoundError",
    "ImportError",
    "IndentationError",
)


def judge_case(
    problem, reply: CaseResult | CaseError, expected, device: str, file: str, specs=None
) -> tuple[Outcome, list | None]:
    """(the Outcome of one call, the returned tensors when they could be read). ``specs``: the outputs the
    case returns (Problem.outputs_for its group; default the problem's)."""
    if isinstance(reply, CaseError):
        return error_outcome(reply.error), None
    specs = list(problem.outputs if specs is None else specs)
    context = rules.Context(file=file, phase="case", output_names=tuple(o.name for o in specs))
    got = reply.tensors()
    found = rules.violation(reply.evidence, reply.outputs, context)
    if found is not None:
        return Outcome(found.verdict, found.message, found.details), got
    wrong = output_rules.check(
        problem, reply.returned, reply.outputs, expected, device, reply.inputs_modified, specs=specs
    )
    if wrong is not None:
        return wrong, got
    found = rules.violation(reply.evidence, reply.outputs, context, stage="provenance")
    if found is not None:
        return Outcome(found.verdict, found.message, found.details), got
    return Outcome(Verdict.AC), got


def judge_refill(first: list | None, second: tuple[Outcome, list | None]) -> Outcome | None:
    """The same input memory held new values: None if the second answer was right.

    If it was wrong, the answer either did not change (the first call's result,
    cached by where its inputs lived: RJ) or is wrong some other way (that
    outcome, said to be from the second call).
    """
    outcome, got = second
    if outcome.passed:
        return None
    same = (
        first is not None
        and got is not None
        and len(first) == len(got)
        and all(
            a.shape == b.shape and a.dtype == b.dtype and torch.equal(a.nan_to_num(), b.nan_to_num())
            for a, b in zip(first, got)
        )
    )
    if same or outcome.details.get("no_kernel"):
        return Outcome(
            Verdict.RJ,
            "when the same input memory held new values, the entry point returned its "
            "previous answer without computing it (a result cached by address)",
        )
    return Outcome(
        outcome.verdict, f"on a second call with new values in the same memory: {outcome.message}", outcome.details
    )


def death_outcome(reason: str, detail: str, *, limit_seconds: float, interpret: bool, loading: bool = False) -> Outcome:
    """A worker that died, hung or broke the protocol, as an Outcome (judge.rules.DEATHS)."""
    text = detail
    details = {"worker_died": reason}
    if reason == "timeout":
        text = f"no answer within {limit_seconds:g} s (killed)"
    if reason == "crash" and interpret and any(sig in text for sig in ("SIGSEGV", "SIGABRT", "SIGBUS")):
        details["hint"] = (
            "the interpreter does not check bounds: a kernel that loads or stores outside its "
            "tensors (a missing mask, or another tensor's strides) corrupts memory"
        )
    if loading:
        text = f"while loading the submission: {text}"
    return Outcome(rules.death_verdict(reason), text, details)


def error_outcome(err: ErrorInfo) -> Outcome:
    """An exception the worker reported, as an Outcome with a one-line message and the details."""
    details = {"error": err.as_dict()}
    if err.hint:
        details["hint"] = err.hint
    if "illegal memory access" in err.message:
        details["hint"] = (
            "a kernel loaded or stored outside its tensors: check masks, and that each tensor is "
            "addressed with its own strides"
        )
    return Outcome(rules.error_verdict(err.category), error_text(err), details)


def error_text(err: ErrorInfo) -> str:
    """One line: what went wrong, and where in the submission's file."""
    first = err.message.strip().splitlines()[0] if err.message.strip() else ""
    where = ""
    if err.category == "compile" and err.line:
        # The kernel's own line, not the launch that triggered the compilation.
        where = f" (line {err.line}: {err.code})" if err.code else f" (line {err.line})"
    elif err.frames:
        f = err.frames[-1]
        where = f" (line {f.line}: {f.code})" if f.code else f" (line {f.line})"
    elif err.line:
        where = f" (line {err.line})"
    if err.category == "compile" and err.type not in NOT_A_KERNEL_ERROR:
        return f"Triton could not compile the kernel{where}: {first}"
    if err.category == "contract":
        return f"{first}{where}"  # the judge's own words (judge.untrusted.calls), not an exception's
    if err.category == "capacity" and rules.gpu_full():  # IE (judge.rules.error_verdict): say why
        first = f"{oom.device_full(err.message)}: {first}"
    if err.type in NOT_A_KERNEL_ERROR:
        return first
    prefix = (
        "error while importing the submission: "
        if err.at_import
        else "error in register(namespace): "
        if err.at_register
        else ""
    )
    return f"{prefix}{err.type}: {first}{where}"
