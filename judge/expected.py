"""The judge's own answers to a case: the float64 golden model, the same-precision naive one, the dtypes.

Both run in the trusted process (never in a worker), on the GPU the
submission was given when there is one. That GPU is shared with the worker
(and, in a course, with other jobs): if it runs out of memory while the judge
computes its answers, the judge computes them on the CPU instead. A
submission's memory use must never turn into an error of the judge's.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from judge import kit
from judge.shared.oom import out_of_memory


@dataclass
class Expected:
    golden: list  # float64 tensors
    naive: list  # tensors in the case's dtype
    dtypes: list  # the dtype each output must have
    device: str = "cpu"  # where they were computed
    # For the hints of a wrong answer (judge.hints): the case's parameters, and its inputs as built
    # (kit.TensorInput or plain values; tensors for a timed call's regenerated inputs).
    params: dict | None = None
    inputs: list | None = None


def _as_list(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


def output_dtypes(problem, dtype_name: str) -> list:
    return [kit.dtype_of(dtype_name if out.dtype == "input" else out.dtype) for out in problem.outputs]


def answers(problem, args: list, dtype_name: str, device: str, params: dict | None = None) -> Expected:
    """Golden and naive answers for ``args`` (tensors in the case's dtype, or scalars); ``params`` (the case's
    parameters) only travel with them, for the hints."""
    try:
        out = _answers(problem, args, dtype_name, device)
    except Exception as exc:  # noqa: BLE001 - only an out-of-memory is retried
        if device == "cpu" or not out_of_memory(exc):
            raise
        torch.cuda.empty_cache()
        out = _answers(problem, args, dtype_name, "cpu")
    out.params, out.inputs = params, list(args)
    return out


def _answers(problem, args, dtype_name, device) -> Expected:
    gold_args = [a.to(device).to(torch.float64) if isinstance(a, torch.Tensor) else a for a in args]
    naive_args = [a.to(device) if isinstance(a, torch.Tensor) else a for a in args]
    golden = _as_list(problem.golden.golden(*gold_args))
    del gold_args
    naive = _as_list(problem.golden.naive(*naive_args))
    return Expected(golden, naive, output_dtypes(problem, dtype_name), device)


def for_inputs(problem, inputs: list, params: dict, device: str) -> Expected:
    """Answers for a case built by golden.make_inputs (kit.TensorInput values, scalars)."""
    args = [a.values if isinstance(a, kit.TensorInput) else a for a in inputs]
    out = answers(problem, args, params.get("dtype", "float32"), device, params)
    out.inputs = list(inputs)  # with their layouts: a hint may read them as a kernel that ignores strides would
    return out
