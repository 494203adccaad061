"""What a replay's result means: the Outcome of a call's record replayed alone on fresh inputs (judge.replay runs it).

A replay that failed is RJ, CE (a kernel the interpreter ran that a GPU would not compile) or IE (the judge's own
GPU full); a replay that ran is judged by the case's own output check (judge.rules.outputs), and a wrong output is
RJ with the launch that last wrote it named. None: the record computes the answer.
"""

from __future__ import annotations

from judge import rules
from judge.replay_input import label, outside_source, tensor_refs
from judge.replies import records
from judge.rules import outputs as output_rules
from judge.shared import kernel_source, oom
from judge.verdicts import Outcome, Verdict

COMPILE_HINT = (
    "in the interpreter a kernel body runs as Python, so Python calls, lists, loops over elements and "
    "a tensor's .handle work there; a GPU compiles only Triton: tl operations on blocks, constexpr "
    "arithmetic, the file's own @triton.jit functions"
)
NAME_HINT = (
    "a kernel may use only Triton, math, its arguments and the file's own @triton.jit functions and "
    "constants (a GPU compiles nothing else)"
)


def outcome(problem, trace, reply, result: records.ReplayResult, answers, device) -> Outcome | None:
    if not result.ok:
        where = label(trace, result.event) if 0 <= result.event < len(trace.events) else "the record"
        err = result.error
        full = oom.device_full(err.message) if rules.gpu_full() else None
        if full:  # the replay worker is the judge's: a GPU filled by other work is no finding against the file
            return Outcome(Verdict.IE, f"the replay check could not run ({where}): {full}", {"replay": "capacity"})
        if result.kind == "record":
            return Outcome(
                Verdict.RJ,
                f"the record of the call could not be replayed ({where}): {err.message}",
                {"replay": "record"},
            )
        if result.kind == "rule":
            return Outcome(Verdict.RJ, f"{where}: {err.message}", {"replay": "rule", "error": err.as_dict()})
        if result.kind == "compile":
            # The interpreter ran it as Python; Triton's compiler, for a GPU, refuses it (judge.untrusted.frontend).
            return Outcome(
                Verdict.CE,
                f"the replay check: {where} would not compile for a GPU (sm_{kernel_source.COMPILE_ARCH}), "
                f"though the interpreter ran it: {err.message}",
                {"replay": "compile", "error": err.as_dict(), "hint": COMPILE_HINT},
            )
        line = f" (line {err.line}: {err.code})" if err.line and err.code else ""
        text = f"replayed alone on fresh inputs, {where} failed: {err.type}: {err.message.splitlines()[0] if err.message else ''}{line}"
        details = {"replay": "error", "error": err.as_dict()}
        if err.type == "NameError":
            details["hint"] = NAME_HINT
        return Outcome(Verdict.RJ, text, details)
    wrong = output_rules.check(problem, reply.returned, result.outputs, answers, device)
    if wrong is None:
        return _written_here(problem, trace, result)
    names = [o.name for o in problem.outputs]
    name = wrong.details.get("output") or next((n for n in names if wrong.message.startswith(n)), None)
    index = names.index(name) if name in names else 0
    ref = trace.outputs[index] if index < len(trace.outputs) else None
    writer = result.writers[index] if index < len(result.writers) else None
    if writer is not None and writer >= len(trace.events):
        writer = None  # only a broken replay worker says so: name nothing rather than something wrong
    given = max(
        (
            k
            for k, e in enumerate(trace.events)
            if e.kind == "launch" and ref is not None and any(r.storage == ref.storage for r in tensor_refs(e))
        ),
        default=None,
    )
    written = f"last written by {label(trace, writer)}" if writer is not None else "no recorded event wrote it"
    if given is not None and (writer is None or trace.events[writer].kind != "launch"):
        who = f"{label(trace, given)} was the last launch given it; {written}"
    elif given is None and writer is not None and trace.events[writer].kind != "launch":
        who = f"no launch was given it; {written}"
    else:
        who = written
    name = name or "the output"
    text = f"replayed alone on fresh inputs, the recorded launches did not compute {name}: {wrong.message} ({who})"
    reached, through = outside_source(trace, ref.storage) if ref is not None else (False, None)
    details = {k: v for k, v in wrong.details.items()}
    if reached:
        how = f"through {label(trace, through)}" if through is not None else "returned as it is"
        text = f"data from outside your kernels reached {name} (memory the call did not make, {how}): {text}"
        details["outside"] = True
    details["replay"] = "wrong"
    if writer is not None:
        details["event"] = label(trace, writer)
    return Outcome(Verdict.RJ, text, details)


def _written_here(problem, trace, result: records.ReplayResult) -> Outcome | None:
    """RJ when a launch that computed an output replayed alone left it as it was in the worker, while it held
    data from outside the kernels: the kernel ran otherwise in the judged process (honest only when replayed),
    and the answer returned there came from elsewhere. An honest launch that happens to write the values
    already there is no finding: outside data in an output is what makes it one."""
    names = [o.name for o in problem.outputs]
    for i, ref in enumerate(trace.outputs):
        w = result.writers[i] if i < len(result.writers) else None
        if ref is None or w is None or w >= len(trace.events):
            continue
        e = trace.events[w]
        if e.kind != "launch" or e.unchanged is None or ref.storage not in e.unchanged:
            continue
        reached, through = outside_source(trace, ref.storage)
        if not reached:
            continue
        name = names[i] if i < len(names) else "the output"
        how = f"through {label(trace, through)}" if through is not None else "returned as it is"
        return Outcome(
            Verdict.RJ,
            f"replayed alone on fresh inputs, {label(trace, w)} computed {name}; in your "
            f"process the same launch left {name} as it was, holding data from outside "
            f"your kernels ({how}): the kernel did not do there what it does replayed",
            {"replay": "not written here", "event": label(trace, w)},
        )
    return None
