"""The submission's own operators, for a problem whose entry point registers them (``factory = "namespace"``).

Such a problem (99) gives the entry point a fresh secret operator namespace and judges the operator it
registers there (torch.library.triton_op or custom_op). Three things change in the worker:

* **An operator of that namespace is looked into.** Called under the operator watch (a TorchDispatchMode),
  the operator reaches the watch as one opaque call, and PyTorch runs the watch's handler with the mode
  switched off: whatever the operator's body dispatched (``x + y``) would never be seen. So the watch counts
  it as the submission's own operator and runs its kernel *with the watch on again*: it re-enters the mode
  and redispatches the operator below the Python key, straight to its CPU/CUDA kernel (the submission's
  function), whose own operators then reach the watch like any wrapper's.
* **Libraries stay in that namespace.** torch.library can register a kernel for any operator, PyTorch's own
  included (``torch.library.impl("aten::copy_", "CPU", f)`` would compute inside an allowed copy). Every
  operator library is opened through ``torch._C._dispatch_library``; one opened for another namespace while
  the submission's code is on the stack is recorded, and the judge rejects it (tampering).
* **In the interpreter, a launch given fake tensors does nothing.** torch.compile traces an operator with
  fake tensors (shapes, no data). On a GPU ``wrap_triton`` turns the launch into a traceable operator whose
  fake rule only describes the outputs; under ``TRITON_INTERPRET=1`` it returns the plain interpreted kernel
  (Triton has no JIT metadata then), which would try to read the fake tensors' memory. Skipping such a
  launch is what the fake rule does on a GPU; real launches are untouched.
"""

from __future__ import annotations

import os
import sys


class _State:
    namespace = ""  # the namespace the judge gave the submission ("" for other problems: nothing changes)
    submission = ""  # the submission's path
    real_redispatch = None  # OpOverload.redispatch as PyTorch defines it (set by judge.untrusted.operators)


_state = _State()  # the worker compares its attributes after every call (judge.untrusted.integrity)
_libraries: list[str] = []  # libraries opened for other namespaces by the submission's code (take_libraries)


def configure(namespace: str, submission: str, real_redispatch) -> None:
    _state.namespace, _state.submission, _state.real_redispatch = namespace, submission, real_redispatch


def target(namespace: str, submission: str) -> None:
    """The namespace and file of the submission the worker was given (a pooled worker learns them late)."""
    _state.namespace, _state.submission = namespace, submission


def is_own(func) -> bool:
    """An operator of the namespace the judge gave the submission."""
    return bool(_state.namespace) and getattr(func, "namespace", None) == _state.namespace


def name_of(func) -> str:
    return str(getattr(getattr(func, "overloadpacket", None), "__name__", func))


def expand(mode, func, args, kwargs):
    """Run one of the submission's operators with ``mode`` (the operator watch) on during its kernel."""
    import torch

    keys = None
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, torch.Tensor):
            k = torch._C._dispatch_keys(a)
            keys = k if keys is None else keys | k
    if keys is None:
        raise RuntimeError(f"{name_of(func)}: an operator of yours must take a tensor argument")
    # Below the Python key: the operator's backend kernel, with no second visit to this handler.
    below = keys & torch._C._dispatch_keyset_full_after(torch._C.DispatchKey.Python)
    with mode:
        return _state.real_redispatch(func, below, *args, **kwargs)


# --------------------------------------------------------------------------- libraries


def _submission_on_stack() -> bool:
    f = sys._getframe(2)
    while f is not None:
        if os.path.realpath(f.f_code.co_filename) == _state.submission:
            return True
        f = f.f_back
    return False


def watch_libraries() -> None:
    """Record every operator library the submission opens for a namespace other than its own."""
    import torch

    original = torch._C._dispatch_library
    if getattr(original, "_judge_wrapped", False):
        return

    def _dispatch_library(kind, ns, *args, **kwargs):
        if ns != _state.namespace and _submission_on_stack():
            _libraries.append(
                f"an operator library for namespace {ns!r} (kind {kind}), where only the namespace "
                "the judge gave register() may be used"
            )
        return original(kind, ns, *args, **kwargs)

    _dispatch_library._judge_wrapped = True
    torch._C._dispatch_library = _dispatch_library


def take_libraries() -> list[str]:
    """What watch_libraries recorded since the last call; then forgets it."""
    out = list(dict.fromkeys(_libraries))
    _libraries.clear()
    return out


# --------------------------------------------------------------------------- fake tensors in the interpreter


def skip_fake_launches(cls) -> None:
    """An interpreted kernel launched with fake tensors (torch.compile tracing) does nothing (see above).

    Plain isinstance checks on classes bound here: Dynamo, tracing a plain function that launches a kernel,
    traces this wrapper too and must find nothing in it to stop at, so that the graph breaks where it would
    without the judge (in Triton's launcher), with that reason."""
    from torch._subclasses.fake_tensor import FakeTensor
    from torch._subclasses.functional_tensor import FunctionalTensor

    fakes = (FakeTensor, FunctionalTensor)
    original = cls.run
    if getattr(original, "_judge_skips_fakes", False):
        return

    def run(self, *args, **kwargs):
        for a in args:
            if isinstance(a, fakes):
                return None
        for a in kwargs.values():
            if isinstance(a, fakes):
                return None
        return original(self, *args, **kwargs)

    run._judge_wrapped = True
    run._judge_skips_fakes = True
    cls.run = run
