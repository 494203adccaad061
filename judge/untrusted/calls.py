"""How a case calls the entry point, in the worker: the group's ``call`` in problem.toml (judge.calls).

* ``direct``: ``fn(*args)``, as every problem always did;
* ``compile``: ``fn`` through torch.compile (judge.untrusted.compiled): compiled outside the operator watch,
  then the compiled code called under it;
* ``grad``: ``fn(*args)`` with the arguments ``wrt`` requiring grad (the watched call, the forward), then,
  outside the watch, ``torch.autograd.grad`` of its outputs with the cotangents the judge sent after the
  arguments. The gradients are the judge's values to check; the submission's backward may compute them
  any way it likes (the exercise is the forward's kernel and that a gradient exists at all).

A factory problem's entry point is called first, once per worker (:func:`register`): with the secret
namespace the judge chose, it registers the operator and returns the callable the cases call.

What the judge does around the call (compiling it, running autograd) is never under the watch, so its own
operators are never taken for the submission's. A call that cannot do what its group asks through no
exception of the submission's own code (a graph break, no gradient) raises :class:`ContractError`: WA with
its message, not a crash.
"""

from __future__ import annotations

import os
import traceback


class ContractError(Exception):
    """The call broke the group's contract: a graph break, no custom operator in the graph, no gradient."""

    def __init__(self, kind: str, message: str, frames=(), hint: str = ""):
        super().__init__(message)
        self.kind, self.frames, self.hint = kind, list(frames), hint

    def as_error(self) -> dict:
        line = self.frames[-1]["line"] if self.frames else None
        return {
            "category": "contract",
            "type": self.kind,
            "message": str(self)[:4000],
            "line": line,
            "code": self.frames[-1]["code"] if self.frames else "",
            "frames": self.frames[-8:],
            "hint": self.hint,
        }


def register(entry, namespace: str):
    """The factory's product: ``entry(namespace)``, which must be callable (else CE, raised as TypeError)."""
    op = entry(namespace)
    if not callable(op) or type(op).__module__.startswith("triton"):
        raise TypeError(
            f"register(namespace) must return your operator (a callable that is not a kernel); it "
            f"returned {type(op).__module__}.{type(op).__qualname__}"
        )
    return op


class Direct:
    """``fn(*args)``."""

    evidence: dict = {}
    derives = False  # finish() adds outputs of the judge's (then the call's own are read before it runs)

    def __init__(self, fn, spec: dict, worker):
        self.fn, self.spec, self.worker = fn, spec, worker

    def prepare(self, args) -> None:
        """Before the watch: nothing to do."""

    def invoke(self, args):
        return self.fn(*args)

    def finish(self, result, args, extra) -> list:
        """After the watch: the outputs the judge adds to the call's (none). ``args``: the call's arguments;
        ``extra``: what the case sent after them (a grad group's cotangents)."""
        return []

    def amend(self, evidence: dict, outputs: list) -> None:
        """Add what this mode knows of the call to its evidence (a compiled graph's)."""


class Compile(Direct):
    """The compiled function (judge.untrusted.compiled), built once per case and kept for its refill."""

    def __init__(self, fn, spec, worker):
        super().__init__(fn, spec, worker)
        self.compiled = None
        self.evidence = {}

    def prepare(self, args) -> None:
        if self.compiled is not None:
            return  # a refill: the same memory, the same graph
        from judge.untrusted.compiled import Compiled, CompileFailed

        ns = self.worker.namespace
        c = Compiled(self.fn, self.spec["backend"], ns, self.worker.path)
        try:
            c.build(args)
        except CompileFailed as exc:
            raise ContractError("GraphBreak", str(exc), exc.frames, exc.hint) from None
        self.evidence = {"graph_ops": list(c.graph_ops), "lowered": list(c.lowered)}
        if ns and not c.has_own_op:
            ops = ", ".join(dict.fromkeys(c.graph_ops)) or "nothing"
            raise ContractError(
                "NotACustomOp",
                "torch.compile traced your callable inline: the graph it captured "
                f"calls no operator of the namespace register() was given (it holds: {ops}); "
                "register the kernel's launch as an operator there",
                hint=(
                    'torch.library.triton_op(f"{namespace}::name", ...) around the launch '
                    "(with wrap_triton), or custom_op with register_fake"
                ),
            )
        self.compiled = c

    def invoke(self, args):
        from judge.untrusted.compiled import FakeMismatch

        try:
            return self.compiled.run(*args)
        except FakeMismatch as exc:
            raise ContractError(
                "FakeMismatch",
                str(exc),
                hint="register_fake must return what the operator returns: same shape, dtype and device "
                "(torch.empty_like of the result the operator computes)",
            ) from None

    def amend(self, evidence: dict, outputs: list) -> None:
        """The graph Dynamo captured, and what Inductor's lowered graphs hold: Inductor launches its own
        compiled copy of the file's kernels (JITFunction.run never sees it) and computes its own operators,
        so those count as the call's launches and operators, and an output the lowered graph took from a
        kernel of the file as written by it."""
        from judge.untrusted.operators import ALLOWED_OPS

        evidence.update(self.evidence)
        lowered = self.evidence.get("lowered") or []
        for graph in lowered:
            for k in graph["kernels"]:
                side = "own_launches" if k["own"] else "other_launches"
                key = f"{k['name']} (compiled by Inductor)"
                evidence[side][key] = evidence[side].get(key, 0) + 1
            for op in graph["ops"]:
                if op not in ALLOWED_OPS and not op.startswith("<ns>::"):
                    key = f"{op} (in the graph Inductor compiled)"
                    evidence["torch_ops"][key] = evidence["torch_ops"].get(key, 0) + 1
        if lowered and all(g["outputs_from_kernels"] and g["kernels"] for g in lowered):
            for out in outputs:
                if out.get("kind") == "tensor" and not out.get("derived"):
                    out["kernel_wrote"] = True


class Grad(Direct):
    """The forward watched; the gradients of its outputs with the judge's cotangents, after."""

    derives = True

    def prepare(self, args) -> None:
        for i in self.spec["wrt"]:
            if not args[i].requires_grad:
                args[i].requires_grad_()

    def finish(self, result, args, extra) -> list:
        import torch

        outs = list(result) if type(result) in (tuple, list) else [result]
        if any(type(o) is not torch.Tensor for o in outs) or len(outs) != len(extra):
            return []  # the judge's check of the forward's outputs says what is wrong
        wrt = [args[i] for i in self.spec["wrt"]]
        if not any(o.requires_grad for o in outs):
            raise ContractError(
                "NoGradient",
                "no gradient: your operator's output does not require grad although "
                "its inputs do, so autograd cannot reach them",
                hint=("register a backward for the operator with torch.library.register_autograd"),
            )
        try:
            grads = torch.autograd.grad(outs, wrt, list(extra), allow_unused=True)
        except RuntimeError as exc:
            if _raised_in(exc, self.worker.path):
                raise  # the submission's backward raised: its error, with its lines (RTE)
            text = str(exc).replace(self.worker.namespace, "<ns>") if self.worker.namespace else str(exc)
            raise ContractError(
                "NoGradient",
                f"no gradient: {text.splitlines()[0] if text else 'autograd failed'}",
                hint="register a backward for the operator with torch.library.register_autograd",
            ) from None
        return list(grads)


MODES = {"direct": Direct, "compile": Compile, "grad": Grad}


def make(worker, spec: dict | None):
    """The call of one case (``spec``: the case message's ``call``, None for a direct one)."""
    spec = spec or {"mode": "direct"}
    return MODES[spec["mode"]](worker.fn, spec, worker)


def _raised_in(exc: BaseException, path: str) -> bool:
    return any(os.path.realpath(fs.filename) == path for fs in traceback.extract_tb(exc.__traceback__))
