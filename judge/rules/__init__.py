"""The rulebook: what a worker's reply means, in one place for the correctness run and the speed run.

* :func:`death_verdict` - a worker that died, hung or broke the protocol;
* :func:`error_verdict` - an exception the worker reported, by its category;
* :func:`violation` - the anti-cheat rules over the evidence of a call, each in
  its own module listed in ``RULES`` (in the order they are tried);
* :mod:`judge.rules.outputs` - what the returned values must be (type,
  device, dtype, shape, no writes into inputs, no aliasing, within tolerance).

A new anti-cheat rule over evidence the worker records is one module here
with a ``check(evidence, outputs, context)`` function (and a ``STAGE``) plus
its name in ``RULES``; see docs/design/extending.md.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from judge.shared.oom import FULL_BELOW  # free bytes under which the judge's own view says the device is full
from judge.verdicts import Verdict

# Anti-cheat rules, tried in this order; the first that finds something decides.
RULES = (
    "tampering",
    "own_threads",
    "threads_left",
    "tensor_subclass",
    "torch_ops",
    "no_kernel",
    "kernel_wrote",
    "custom_op",
)

# How a worker's end maps to a verdict (judge.channel.WorkerDied.reason).
DEATHS = {
    "timeout": Verdict.TLE,
    "memory": Verdict.MLE,
    "output": Verdict.OLE,
    "crash": Verdict.RTE,
    "protocol": Verdict.RJ,  # a forged or malformed reply
    "starved": Verdict.IE,  # the host's other work, not the file, used its time (judge.starvation)
}

# How an exception the worker reported maps to a verdict (judge.replies.records.ErrorInfo.category).
# "contract": the call could not do what its group asks, through no exception of the submission's own code (a
# graph break under torch.compile, an operator with no gradient: judge.untrusted.calls); its values are wrong.
# "capacity": out of GPU memory within the worker's own cap, the device filled by other work (judge.shared.oom):
# the judge's failure, judged again by the next run, once the judge sees the device full itself (gpu_full);
# else the worker's word alone, which a submission can forge (to probe the tests without spending an attempt, as
# an IE is "not graded" on PrairieLearn: a red-team finding): MLE.
ERRORS = {
    "compile": Verdict.CE,
    "memory": Verdict.MLE,
    "runtime": Verdict.RTE,
    "rule": Verdict.RJ,
    "contract": Verdict.WA,
    "capacity": Verdict.IE,
}


@dataclass(frozen=True)
class Context:
    """Where the evidence comes from: the submission's file name, and the phase."""

    file: str
    phase: str = "case"  # "case" (a judged call), "warmup" (the watched call before timing) or "timed"
    where: str = ""  # e.g. "at bench shape n=4096, dtype=float32", prefixed to messages of the speed run
    output_names: tuple = ()  # the problem's output names, in order


@dataclass(frozen=True)
class Finding:
    """A rule's judgement: RJ unless the rule says otherwise, with a one-line reason."""

    message: str
    details: dict = field(default_factory=dict)
    verdict: Verdict = Verdict.RJ


def death_verdict(reason: str) -> Verdict:
    return DEATHS.get(reason, Verdict.RTE)


def error_verdict(category: str) -> Verdict:
    if category == "capacity" and not gpu_full():
        return Verdict.MLE
    return ERRORS.get(category, Verdict.RTE)


def gpu_full() -> bool:
    """Whether the judge's own GPU (the one its golden models use, where a worker's "the device was full" is
    checked) has less than FULL_BELOW free now. False without CUDA in this process."""
    try:
        import torch

        if not torch.cuda.is_available() or not torch.cuda.is_initialized():
            return False
        free, _ = torch.cuda.mem_get_info()
        return free < FULL_BELOW
    except Exception:  # noqa: BLE001 - no view of the device: the worker's word is not enough
        return False


_loaded: list | None = None


def rules() -> list:
    """The rule modules, in RULES order."""
    global _loaded
    if _loaded is None:
        _loaded = [importlib.import_module(f"judge.rules.{name}") for name in RULES]
    return _loaded


def violation(evidence, outputs=(), context: Context | None = None, stage: str = "evidence") -> Finding | None:
    """The first rule of ``stage`` that the evidence breaks, or None.

    Stage "evidence" runs before the values are looked at (a rule broken there
    decides, whatever the values); stage "provenance" runs once the values are
    right (an output nobody's kernel wrote is a cheat only if it is correct).
    """
    context = context or Context(file="the submission")
    for rule in rules():
        if getattr(rule, "STAGE", "evidence") != stage:
            continue
        found = rule.check(evidence, tuple(outputs), context)
        if found is not None:
            return found
    return None
