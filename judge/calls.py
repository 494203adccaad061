"""How a group's cases call the entry point (problem.toml's ``call``), on the judge's side.

A group's ``call`` says what one case does with the submission's callable (judge.untrusted.calls does it in
the worker):

* ``direct`` (the default): ``out = fn(*args)``;
* ``compile``: ``out = torch.compile(lambda *a: fn(*a), fullgraph=True)(*args)`` with the problem's
  ``[compile]`` backend (``inductor`` on a GPU, ``eager`` in the interpreter by default). A graph break
  fails the case (WA), and so does a graph that calls no operator of the submission's namespace when the
  entry point is a namespace factory;
* ``grad``: ``out = fn(*args)`` with the arguments ``[grad] wrt`` requiring grad, then the gradients of
  ``out`` with respect to them for cotangents the judge draws here (normal values shaped like each output,
  in its dtype, from the case's seed). The case's outputs are ``out`` followed by the gradients, named by
  ``[grad] outputs``; the golden gradients are autograd's through golden.py's ``golden`` (float64) and
  ``naive`` (the case's dtype), so golden.py needs nothing new.

And the entry point itself may be a factory (``factory = "namespace"``): the worker calls it once with a
fresh secret operator namespace (:func:`worker_setup`) and judges what it returns; a submission can neither
know the namespace in advance nor collide with another run's.
"""

from __future__ import annotations

import secrets

from judge import kit
from judge.cases import derive_seed

LOWERS_KERNELS = ("inductor",)  # backends that compile their own copy of the kernels (JITFunction.run sees none)


def worker_setup(problem, interpret: bool) -> dict:
    """What a worker's setup message adds for this problem: the factory and its namespace, and whether the
    judge will compile calls (the worker imports torch.compile's modules before the submission then)."""
    out: dict = {}
    if problem.factory == "namespace":
        out.update(factory="namespace", namespace=f"ns_{secrets.token_hex(8)}")
    if "compile" in problem.calls():
        out["compiling"] = True
    return out


def case_spec(problem, group, interpret: bool) -> dict | None:
    """The ``call`` of a case message (None: a direct call)."""
    if group is None or group.call == "direct":
        return None
    if group.call == "compile":
        return {"mode": "compile", "backend": problem.compile_backend(interpret)}
    return {"mode": "grad", "wrt": list(problem.grad_wrt)}


def replayed(problem, group, interpret: bool) -> bool:
    """Whether the replay check can replay this group's calls: not a graph Inductor lowered (the record holds
    no launch of the file's kernels, only of Inductor's copies; the same operator is replayed in the groups
    that call it directly)."""
    return not (group is not None and group.call == "compile" and problem.compile_backend(interpret) in LOWERS_KERNELS)


NOT_REPLAYED = (
    "the replay check does not replay the calls of a group compiled by Inductor (it launches its own "
    "copy of your kernels, outside Triton's JITFunction.run); the groups that call your operator "
    "directly are replayed"
)


def cotangents(answers, params: dict) -> list:
    """One cotangent per output (kit.TensorInput, contiguous): normal values in its shape and dtype."""
    gen = kit.generator(derive_seed("cotangent", params["seed"]))
    return [kit.TensorInput(kit.normal(tuple(g.shape), gen, dtype)) for g, dtype in zip(answers.golden, answers.dtypes)]


def add_gradients(problem, answers, inputs: list, cots: list) -> None:
    """Extend ``answers`` (judge.expected) with the golden and naive gradients for the cotangents ``cots``."""
    import torch

    args = [a.values if isinstance(a, kit.TensorInput) else a for a in inputs]
    device = answers.device
    dtype_name = (answers.params or {}).get("dtype", "float32")
    golden = _gradients(problem.golden.golden, problem.grad_wrt, args, cots, device, torch.float64)
    naive = _gradients(problem.golden.naive, problem.grad_wrt, args, cots, device, None)
    answers.golden += golden
    answers.naive += naive
    answers.dtypes += [kit.dtype_of(dtype_name if o.dtype == "input" else o.dtype) for o in problem.grad_outputs]


def _gradients(model, wrt, args, cots, device, dtype) -> list:
    import torch

    xs = [a.to(device).to(dtype or a.dtype) if isinstance(a, torch.Tensor) else a for a in args]
    leaves = []
    for i in wrt:
        xs[i] = xs[i].detach().requires_grad_()
        leaves.append(xs[i])
    outs = model(*xs)
    outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
    grads = torch.autograd.grad(
        outs, leaves, [c.values.to(device).to(dtype or c.dtype) for c in cots], allow_unused=True
    )
    return [torch.zeros_like(x) if g is None else g.detach() for g, x in zip(grads, leaves)]
