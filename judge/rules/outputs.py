"""What the returned values must be: the same rule for a judged case and for a timed call's outputs.

In order, the first failure decides (all WA): the return type (the tensor
itself, or a tuple of the problem's outputs), each item an exact
``torch.Tensor`` on the inputs' device with the expected dtype and shape, the
inputs left unchanged, no output sharing memory with an input, and every value
within the tolerance of judge.checker against the golden answer.
"""

from __future__ import annotations

from judge import checker, hints
from judge.verdicts import Outcome, Verdict


def _dn(dtype) -> str:
    return str(dtype).removeprefix("torch.")


def check(problem, returned: str, outputs, expected, device: str, inputs_modified=(), specs=None) -> Outcome | None:
    """None when the outputs are right; otherwise a WA Outcome saying what is wrong and where.

    ``returned`` and ``outputs`` come from a parsed reply (judge.replies),
    ``expected`` from judge.expected (its ``params`` and ``inputs``, when it has
    them, feed the hints of a wrong value), ``device`` is "cuda" or "cpu".
    ``specs``: the outputs to check (Problem.outputs_for a group: a grad group's gradients follow the
    entry's own outputs; ``returned`` describes the entry's alone).
    """
    specs = list(problem.outputs if specs is None else specs)
    names = [o.name for o in specs]
    want = len(problem.outputs)
    derived = len(specs) - want  # values the judge derived from the call (gradients), after its outputs
    entry = problem.entry_point if not problem.factory else "your operator"
    if want == 1:
        if returned != "torch.Tensor":
            return Outcome(Verdict.WA, f"{entry} must return the tensor {names[0]} itself, not a {returned}")
    elif returned not in ("tuple", "list") or len(outputs) - derived != want:
        got = returned if returned not in ("tuple", "list") else f"{len(outputs) - derived} items"
        return Outcome(Verdict.WA, f"{entry} must return a tuple ({', '.join(names[:want])}); it returned {got}")
    if len(outputs) < len(specs):
        return Outcome(Verdict.WA, f"no gradient came back for {', '.join(names[len(outputs) :])}")
    for name, out, gold, dtype in zip(names, outputs, expected.golden, expected.dtypes):
        if out.kind != "tensor":
            return Outcome(Verdict.WA, f"{name} must be exactly a torch.Tensor, not {out.type}")
        if out.device.split(":")[0] != device:
            return Outcome(Verdict.WA, f"{name} is on {out.device}; expected it on the input's device ({device})")
        if out.dtype != _dn(dtype):
            return Outcome(Verdict.WA, f"{name} has dtype {out.dtype}; expected {_dn(dtype)}")
        if list(out.shape) != list(gold.shape):
            return Outcome(Verdict.WA, f"{name} has shape {tuple(out.shape)}; expected {tuple(gold.shape)}")
    if inputs_modified:
        which = ", ".join(f"argument {i + 1}" for i in inputs_modified)
        return Outcome(
            Verdict.WA,
            f"the entry point wrote into its inputs ({which}); it must leave them unchanged and return new tensors",
        )
    for name, out in zip(names, outputs):
        if out.aliases_input and not out.derived:
            return Outcome(Verdict.WA, f"{name} shares memory with an input; return a new tensor")
    case = hints.Case(
        problem,
        getattr(expected, "params", None) or {},
        getattr(expected, "inputs", None),
        getattr(expected, "device", "cpu"),
    )
    for i, (spec, out, gold, naive, dtype) in enumerate(
        zip(specs, outputs, expected.golden, expected.naive, expected.dtypes)
    ):
        mismatch = checker.compare(
            spec.name,
            out.tensor,
            gold,
            naive,
            dtype,
            spec.scope,
            problem.check,
            problem.check.get("dim_names", {}).get(spec.name),
            case=case,
            index=i,
        )
        if mismatch is not None:
            return Outcome(
                Verdict.WA,
                mismatch.message,
                {
                    "output": mismatch.output,
                    "pattern": mismatch.pattern,
                    "hint": mismatch.hint,
                    "hint_id": mismatch.hint_id,
                    "bad": mismatch.bad,
                    "total": mismatch.total,
                    "samples": [
                        {"index": list(s[0]), "got": s[1], "expected": s[2], "allowed_error": s[3]}
                        for s in mismatch.samples
                    ],
                },
            )
    return None
