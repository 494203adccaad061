"""torch.compile around the submission's callable, for a group with ``call = "compile"`` (judge.untrusted.calls).

The judge compiles ``lambda *args: fn(*args)`` with ``fullgraph=True`` (a graph break is an error, not a
silent fallback to Python) and ``dynamic=False`` (one graph per case's shapes: no symbolic sizes among
the graph's inputs). Dynamo refuses to run while a TorchDispatchMode is active, the operator watch
included, so the work is split in two:

1. **Compile, outside the watch** (the judge's work, not the call's): Dynamo traces the function on
   *stand-ins* of the case's inputs (fresh zeroed memory of the same sizes, strides and offsets; the
   submission's code sees fake tensors while traced, and never the case's values), and a capturing backend
   keeps the graph it was handed, hands it to the real backend (``eager`` in the interpreter, ``inductor`` on
   a GPU) and returns a stand-in that runs nothing: the compiled code runs only in step 2.
2. **Run, under the watch** (the call): the backend's compiled callable, called directly with the case's
   own inputs in the graph's order, and its outputs put back in the function's return structure.

What the graph held is evidence: the operators Dynamo captured (the submission's operator must be among
them: a plain ``@triton.jit`` launch is traced inline on a GPU, or breaks the graph in the interpreter),
and with Inductor the graph it lowered after AOTAutograd (judge.untrusted.calls turns that into launches and
operators: Inductor launches its own compiled copy of the kernels, which Triton's ``JITFunction.run`` never
sees).
"""

from __future__ import annotations

import os

# Operators of a lowered graph that compute nothing (the guard's ALLOWED_OPS are checked as well).
GRAPH_PLUMBING = {"getitem"}
TRITON_HOPS = ("triton_kernel_wrapper_functional", "triton_kernel_wrapper_mutation")


class CompileFailed(Exception):
    """torch.compile could not compile the function: a graph break, or tracing the operator failed."""

    def __init__(self, message: str, frames: list[dict], hint: str = ""):
        super().__init__(message)
        self.frames = frames
        self.hint = hint


def label(target, namespace: str) -> str:
    """A graph node's target as a name: ``add`` for PyTorch's, ``<ns>::add`` for the submission's operator."""
    ns = getattr(target, "namespace", None)
    packet = getattr(target, "overloadpacket", None)
    if ns is not None and packet is not None:
        name = str(packet.__name__)
        if ns == namespace:
            return f"<ns>::{name}"
        return name if ns == "aten" else f"{ns}::{name}"
    return str(getattr(target, "_name", None) or getattr(target, "__name__", None) or type(target).__name__)


def _stand_in(a):
    """Fresh zeroed memory laid out like ``a`` (same sizes, strides, offset, storage size, dtype, device)."""
    import torch

    if not isinstance(a, torch.Tensor):
        return a
    n = a.untyped_storage().nbytes() // a.element_size()
    base = torch.zeros(n, dtype=a.dtype, device=a.device)
    view = torch.as_strided(base, a.shape, a.stride(), a.storage_offset())
    return view.requires_grad_(a.requires_grad) if a.requires_grad else view


def _outputs_of(gm):
    """Stand-in outputs of a graph, from the fake values Dynamo recorded on its output node."""
    import torch

    node = next(n for n in gm.graph.nodes if n.op == "output")
    outs = []
    for arg in node.args[0]:
        v = arg.meta.get("example_value") if hasattr(arg, "meta") else arg
        outs.append(
            torch.empty_strided(v.shape, v.stride(), dtype=v.dtype, device=v.device)
            if isinstance(v, torch.Tensor)
            else v
        )
    return outs


def _failure(exc, namespace: str, submission: str) -> CompileFailed:
    """Dynamo's error as one line (its first line and explanation), with the submission's frames."""
    lines = [ln.strip() for ln in str(exc).replace(namespace, "<ns>").splitlines() if ln.strip()]
    head = lines[0] if lines else type(exc).__name__
    why = next((ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("Explanation:")), "")
    text = f"{head}: {why}" if why and why not in head else head
    stack = list(getattr(exc, "real_stack", None) or [])
    frames = [
        {"line": fs.lineno, "function": fs.name, "code": (fs.line or "").strip()}
        for fs in stack
        if os.path.realpath(fs.filename) == submission
    ]
    if stack and frames and _in_launcher(stack[-1].filename):
        # In the interpreter a launch is Python all the way down (Triton's interpreter, and the judge's
        # record of launches around it): Dynamo stops somewhere in there, which says nothing about the
        # file. (On a GPU Dynamo traces a bare launch inline instead: no graph break, no operator.)
        text = (
            "a Triton kernel launched outside a registered operator (the interpreter's launch is Python "
            "that Dynamo cannot trace)"
        )
    return CompileFailed(
        f"torch.compile(fullgraph=True) of a function calling your operator failed with a graph break: {text[:600]}",
        frames[-8:],
        hint="a @triton.jit launch is opaque Python to Dynamo: register the launch as an "
        "operator (torch.library.triton_op with wrap_triton, or custom_op with register_fake)",
    )


def _in_launcher(filename: str) -> bool:
    """A frame of Triton's runtime or of the judge's wrappers of its launchers."""
    path = os.path.realpath(filename)
    here = os.path.dirname(os.path.realpath(__file__)) + os.sep
    return path.startswith(here) or f"{os.sep}triton{os.sep}runtime{os.sep}" in path


def _compile_failure(exc) -> BaseException | None:
    """The Triton compile error a backend failure wraps (a CE of the kernel, not of the graph), if any."""
    try:
        from triton.compiler.errors import CompilationError
    except ImportError:  # pragma: no cover
        return None
    seen, e = set(), exc
    while e is not None and id(e) not in seen:
        if isinstance(e, CompilationError):
            return e
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return None


class FakeMismatch(Exception):
    """The compiled code returned a tensor other than the one the traced graph promised."""


def _promise(v) -> tuple | None:
    """What the traced graph says an output is (its shape, dtype and device type), for a tensor."""
    import torch

    return (tuple(v.shape), v.dtype, v.device.type) if isinstance(v, torch.Tensor) else None


def _said(p: tuple) -> str:
    shape, dtype, device = p
    return f"shape {shape}, dtype {str(dtype).removeprefix('torch.')} on {device}"


class Compiled:
    """One case's compiled function: built on stand-ins (``build``), run on the case's inputs (``run``)."""

    def __init__(self, fn, backend: str, namespace: str, submission: str):
        self.fn, self.backend, self.namespace, self.submission = fn, backend, namespace, submission
        self.graph_ops: list[str] = []  # what Dynamo captured
        self.lowered: list[dict] = []  # Inductor only: each lowered graph's operators and kernels
        self._compiled = None
        self._order: list = []
        self._result = None  # how the function's return value is made of the graph's outputs
        self._promised: list = []  # each graph output as the trace saw it (_promise), from the fake values

    def build(self, args) -> None:
        import torch
        import torch._dynamo

        from judge.untrusted import determinism

        determinism.sync(torch)  # Inductor's deterministic flag, now that it is imported
        torch._dynamo.reset()
        stand_ins = [_stand_in(a) for a in args]
        stubs: list = []

        def capture(gm, example_inputs):
            self.graph_ops = [label(n.target, self.namespace) for n in gm.graph.nodes if n.op == "call_function"]
            # Each graph input: one of the case's arguments (by index), or what Dynamo lifted from elsewhere
            # (a global tensor of the file's), passed as it is, as Dynamo's own bytecode would.
            self._order = [next((i for i, s in enumerate(stand_ins) if s is x), ("lifted", x)) for x in example_inputs]
            if any(op.startswith("<ns>::") for op in self.graph_ops):
                self._compiled = self._backend(gm, list(example_inputs))
            stubs[:] = _outputs_of(gm)
            self._promised = [_promise(s) for s in stubs]
            return lambda *_: tuple(stubs)

        fn = self.fn
        compiled_fn = torch.compile(lambda *a: fn(*a), fullgraph=True, dynamic=False, backend=capture)
        try:
            ret = compiled_fn(*stand_ins)
        except torch._dynamo.exc.BackendCompilerFailed as exc:
            inner = _compile_failure(exc)
            raise inner if inner is not None else exc from None
        except (torch._dynamo.exc.TorchDynamoException, torch._dynamo.exc.UserError) as exc:
            raise _failure(exc, self.namespace, self.submission) from None
        self._result = self._structure(ret, stubs)

    def _backend(self, gm, example_inputs):
        if self.backend == "inductor":
            from torch._inductor.compile_fx import compile_fx, compile_fx_inner

            def inner(graph, inputs, **kwargs):
                self.lowered.append(self._lowered(graph))
                return compile_fx_inner(graph, inputs, **kwargs)

            return compile_fx(gm, example_inputs, inner_compile=inner)
        from torch._dynamo.backends.registry import lookup_backend

        return lookup_backend(self.backend)(gm, example_inputs)

    @staticmethod
    def _structure(ret, stubs):
        """The function returned ``ret``, made of the stand-in outputs ``stubs``: as indices into them."""
        index = {id(s): i for i, s in enumerate(stubs)}
        if id(ret) in index:
            return index[id(ret)]
        if isinstance(ret, (tuple, list)) and all(id(r) in index for r in ret):
            return (type(ret), [index[id(r)] for r in ret])
        raise CompileFailed("the compiled function returned something other than the graph's outputs", [])

    def run(self, *args):
        """The compiled code on the case's own inputs (the watched call)."""
        inputs = [args[i] if isinstance(i, int) else i[1] for i in self._order]
        outs = self._compiled(*inputs)  # as Dynamo's bytecode calls a backend's product: positionally
        # The graph was built on the operator's fake implementation (register_fake, or triton_op's own
        # trace): an operator that returns another tensor than its fake says is not compile-safe, since what
        # torch.compile plans around it (buffers, the ops after it) follows the fake.
        for i, (promised, out) in enumerate(zip(self._promised, outs)):
            got = _promise(out)
            if promised is not None and got != promised:
                raise FakeMismatch(
                    f"the traced graph's output {i + 1} (from your operator's fake implementation, register_fake) "
                    f"is {_said(promised)}; the operator returned "
                    + (_said(got) if got is not None else type(out).__qualname__)
                )
        if isinstance(self._result, int):
            return outs[self._result]
        kind, picks = self._result
        return kind(outs[i] for i in picks)

    @property
    def has_own_op(self) -> bool:
        return self._compiled is not None

    # ------------------------------------------------------------------ Inductor's lowered graph

    def _lowered(self, gm) -> dict:
        """The operators and the Triton kernels of a graph Inductor lowers (after AOTAutograd)."""
        ops, kernels, from_kernel = [], [], set()
        for n in gm.graph.nodes:
            if n.op != "call_function":
                continue
            name = label(n.target, self.namespace)
            if name in TRITON_HOPS:
                kernel, own = self._kernel(n.kwargs.get("kernel_idx"))
                kernels.append({"name": kernel, "own": own})
                if own:
                    from_kernel.add(n)
            elif name == "getitem" and n.args and n.args[0] in from_kernel:
                from_kernel.add(n)
            elif name not in GRAPH_PLUMBING:
                ops.append(name)
                if name.startswith("<ns>::"):
                    from_kernel.add(n)  # not lowered: it runs as the operator, under the watch
        out = next(n for n in gm.graph.nodes if n.op == "output")
        results = [
            a for a in (out.args[0] if isinstance(out.args[0], (tuple, list)) else [out.args[0]]) if hasattr(a, "op")
        ]
        return {"ops": ops, "kernels": kernels, "outputs_from_kernels": all(a in from_kernel for a in results)}

    def _kernel(self, idx) -> tuple[str, bool]:
        from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table

        kernel = kernel_side_table.get_kernel(idx)
        fn = kernel
        for _ in range(8):  # an autotuner or heuristics wrapper, looked through
            if hasattr(fn, "fn") and not hasattr(fn, "__code__"):
                fn = fn.fn
        code = getattr(fn, "__code__", None)
        own = code is not None and os.path.realpath(code.co_filename) == self.submission
        return str(getattr(fn, "__name__", "?")), own
