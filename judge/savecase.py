"""``--save-case DIR``: the failing case as a file, to debug in a notebook.

The case is rebuilt here, in the trusted judge, from the failing group's
(shrunk) case parameters: golden.py's ``make_inputs`` with the case's seed,
laid out exactly as the worker received it (the same storages, with their NaN
padding, shapes, strides and offsets), and the golden model's answers in
float64. Nothing comes from the worker. The file is a ``torch.save`` of a
dict that ``torch.load(path, weights_only=True)`` reads back:

* ``args``: the entry point's arguments, tensors as views of their storages
  (torch.save keeps a view's storage, strides and offset) on the run's device;
* ``inputs``: each argument's layout as data (``shape``, ``stride``,
  ``offset``, ``dtype``, ``storage_numel``) or ``{"value": v}`` for a scalar;
* ``expected``: the golden outputs (float64, on the CPU), ``expected_dtypes``:
  the dtype each output must have, ``outputs``: their names;
* ``params``, ``group``, ``problem``, ``entry_point``, ``verdict``,
  ``message``, ``reproduce``: what the case is and how it failed.

The report carries the path and a three-line loader (the failure's
``details.saved_case``).
"""

from __future__ import annotations

from pathlib import Path

import torch

from judge import calls, expected, kit

SAVED_CASE_VERSION = 1


def failing_group(report):
    """The first group that failed on a case (its shrunk case), or None."""
    return next((g for g in report.groups if not g.passed and not g.skipped and g.case is not None), None)


def build_case(problem, params: dict, device: str = "cpu", group=None) -> dict:
    """The dict saved for PROBLEM's case PARAMS, its tensors' views on DEVICE. A grad GROUP's case also holds
    its ``cotangents`` and the golden gradients after the outputs (judge.calls)."""
    inputs = problem.golden.make_inputs(dict(params), kit.generator(params["seed"]))
    args, layouts = [], []
    for arg in inputs:
        if isinstance(arg, kit.TensorInput):
            storage = arg.storage().to(device)
            view = torch.as_strided(storage, tuple(arg.values.shape), tuple(arg.strides()), arg.offset)
            args.append(view)
            layouts.append(
                {
                    "shape": list(view.shape),
                    "stride": list(view.stride()),
                    "offset": arg.offset,
                    "dtype": str(arg.dtype).removeprefix("torch."),
                    "storage_numel": storage.numel(),
                }
            )
        else:
            args.append(arg)
            layouts.append({"value": arg})
    answers = expected.for_inputs(problem, inputs, params, "cpu")
    extra = {}
    if group is not None and group.call == "grad":
        cots = calls.cotangents(answers, params)
        calls.add_gradients(problem, answers, inputs, cots)
        extra["cotangents"] = [c.values.to(device) for c in cots]
    return {
        **extra,
        "version": SAVED_CASE_VERSION,
        "problem": {"id": problem.id, "slug": problem.slug},
        "entry_point": problem.entry_point,
        "signature": problem.signature,
        "params": dict(params),
        "args": args,
        "inputs": layouts,
        "outputs": [o.name for o in problem.outputs_for(group)],
        "expected": [g.detach().to("cpu", torch.float64) for g in answers.golden],
        "expected_dtypes": [str(d).removeprefix("torch.") for d in answers.dtypes],
    }


def loader(problem, path: Path, submission: str, device: str, outputs: list | None = None) -> str:
    """Three lines that load the saved case and call the submission on it (``outputs``: the names of what
    ``case["expected"]`` holds, by default the problem's outputs)."""
    module = Path(submission).stem
    first = "import torch"
    if device == "cpu":
        first = 'import os; os.environ.setdefault("TRITON_INTERPRET", "1"); import torch'
    if module.isidentifier():
        first += f"; from {module} import {problem.entry_point}"
    # A factory is called first, with a namespace of your own (judge.calls).
    entry = f'{problem.entry_point}("mylib")' if problem.factory else problem.entry_point
    call = f'out = {entry}(*case["args"])' if module.isidentifier() else 'args = case["args"]'
    return "\n".join(
        [
            first,
            f"case = torch.load({str(path)!r}, weights_only=True)",
            f'{call}  # compare with case["expected"]: {", ".join(outputs or [o.name for o in problem.outputs])} '
            "in float64",
        ]
    )


def save_failing_case(problem, report, directory: Path, *, device: str) -> Path | None:
    """Save the first failing group's case under DIRECTORY and note it in its failure's details; None (and a
    note in the report) when no group failed on a case."""
    group = failing_group(report)
    if group is None:
        report.notes.append("--save-case: nothing saved: no test group failed on a case")
        return None
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{problem.id:03d}-{problem.slug}-{group.name}.pt"
    where = "cuda" if device == "cuda" else "cpu"
    spec = next((g for g in problem.groups if g.name == group.name), None)
    data = build_case(problem, group.case, where, spec)
    data.update(group=group.name, verdict=group.verdict.value, message=group.message, reproduce=group.repro)
    torch.save(data, path)
    group.details = {
        **(group.details or {}),
        "saved_case": {
            "path": str(path),
            "loader": loader(problem, path, report.submission["path"], where, data["outputs"]),
        },
    }
    return path
