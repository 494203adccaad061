"""Would this launch compile for a GPU? Triton's front end, run without one.

In the interpreter (TRITON_INTERPRET=1) a ``@triton.jit`` body is ordinary
Python: it can call ``math.exp`` on floats, index a loaded block's NumPy buffer
(``x.handle.data``), build lists, loop over elements. None of that is Triton,
none of it compiles on a GPU, and a "kernel" written that way passes every
check that only looks at answers (a red team got AC on softmax so). The GPU
path would refuse it at compile time; on a CPU the judge asks the same
question of the same compiler: it lowers each launched kernel, with the
launch's argument types and constants, from its AST to Triton IR for an sm_90
target. That stage is Python and MLIR only (no ptxas, no driver): tens of
milliseconds per specialization.

It cannot run in the replay worker itself: a process that imported Triton with
TRITON_INTERPRET=1 holds Triton's own library (``tl.sum``'s combine function,
``tl.cdiv``...) as interpreted functions, which the compiler refuses. So the
replay worker (judge.untrusted.replay) types each launch with Triton's own
binder (``Specializer``) and asks a child process, started without the
interpreter (``python -m judge.untrusted.frontend FILE``; it imports Triton
alone, in a fraction of a second), which compiles the file's kernels from
their source, never importing the submission. One JSON line each way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from judge.shared.kernel_source import COMPILE_ARCH

WARP = 32


def _target():
    from triton.backends.compiler import GPUTarget
    from triton.compiler import make_backend

    target = GPUTarget("cuda", COMPILE_ARCH, WARP)
    return target, make_backend(target)


def _jit_function(obj):
    """The JITFunction under ``obj`` (an autotuner or heuristics wrapper looked through), or None."""
    from triton.runtime.jit import JITFunction

    depth = 0
    while obj is not None and not isinstance(obj, JITFunction) and depth < 8:
        obj, depth = getattr(obj, "fn", None), depth + 1
    return obj if isinstance(obj, JITFunction) else None


# --------------------------------------------------------------------------- the replay worker's side


def _constant(value):
    """A constexpr as JSON, or raise TypeError for one the check does not carry (a function, say)."""
    import triton.language as tl

    if isinstance(value, tl.constexpr):
        value = value.value
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, tl.dtype):
        return {"dtype": value.name}
    raise TypeError(type(value).__name__)


class Specializer:
    """Types a launch as Triton's launcher would for the GPU (signature, constants, alignment attributes)."""

    def __init__(self):
        self.target, self.backend = _target()
        self.binders: dict = {}

    def describe(self, kernel, args: list, kwargs: dict) -> dict | str:
        """The launch as a compile request, or why it cannot be typed for a GPU (Triton's launcher would refuse
        it there: a string that is not a constexpr, say)."""
        from triton.runtime.jit import JITFunction, create_function_from_signature

        fn = kernel.fn if not isinstance(kernel, JITFunction) else kernel
        try:
            jit = kernel if isinstance(kernel, JITFunction) else JITFunction(fn)
            binder = self.binders.get(id(fn))
            if binder is None:
                binder = self.binders[id(fn)] = (
                    jit,
                    create_function_from_signature(jit.signature, jit.params, self.backend),
                )
            jit, bind = binder
            bound, specialization, options = bind(*args, **dict(kwargs))
            options, signature, constexprs, attrs = jit._pack_args(
                self.backend, dict(kwargs), bound, specialization, options
            )
            return {
                "signature": signature,
                "constexprs": [[list(path), _constant(v)] for path, v in constexprs.items()],
                "attrs": [[list(path), v] for path, v in attrs.items()],
                "options": {k: v for k, v in kwargs.items() if k in ("num_warps", "num_stages", "num_ctas")},
            }
        except Exception as exc:  # noqa: BLE001 - not typable for a GPU: refused, never left unchecked
            return f"{type(exc).__name__}: {exc}"[:500]


class Checker:
    """The child process, and the answers it gave (one per kernel and specialization)."""

    def __init__(self, path: str):
        self.path = path
        self.proc = self._start()
        self.specializer = Specializer()
        self.answers: dict = {}

    def _start(self):
        env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
        return subprocess.Popen(
            [sys.executable, "-m", "judge.untrusted.frontend", self.path],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def _ask(self, line: str) -> dict | None:
        """The child's answer to one request; None when it died on it (it is started afresh for the next)."""
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
            text = self.proc.stdout.readline()
        except (OSError, ValueError):
            text = ""
        if not text:
            self.close()
            self.proc = self._start()
            return None
        try:
            answer = json.loads(text)
        except ValueError:
            return {}
        return answer if isinstance(answer, dict) else {}

    def check(self, name: str, kernel, args: list, kwargs: dict) -> tuple[str, str, int | None] | None:
        """None when the launch compiles (or could not be checked); else (kind, message, line): "compile" with the
        compiler's reason, or "rule" for a kernel that reads or makes an address (judge.untrusted.addresses)."""
        request = self.specializer.describe(kernel, args, kwargs)
        if isinstance(request, str):
            # Unchecked, its body could do anything the interpreter runs (and a GPU compiles nothing of it).
            return ("compile", f"its arguments cannot be typed for a GPU, as Triton's launcher would: {request}", None)
        request["kernel"] = name
        line = json.dumps(request, sort_keys=True)
        if line not in self.answers:
            answer = self._ask(line)
            if answer is None:
                # The compiler died on it (an assertion of MLIR's, say): asked once more, in a fresh child, and
                # dead again it is the kernel's doing. Never left unchecked: a file could otherwise turn the check
                # off for its later launches by killing the child once.
                answer = self._ask(line)
                if answer is None:
                    answer = {"refused": "Triton's compiler crashed on this kernel (it would not compile for a GPU)"}
            if isinstance(answer.get("refused"), str):
                self.answers[line] = ("compile", answer["refused"], None)
            elif isinstance(answer.get("rule"), str):
                at = answer.get("line")
                self.answers[line] = ("rule", answer["rule"], at if isinstance(at, int) else None)
            else:
                self.answers[line] = None
        return self.answers[line]

    def close(self) -> None:
        try:
            self.proc.kill()
        except OSError:
            pass


# --------------------------------------------------------------------------- the child


def _restore(value):
    import triton.language as tl

    if isinstance(value, dict) and "dtype" in value:
        return tl.dtype(value["dtype"])
    return value


def _tuples(value):
    """JSON made Triton's tuples (a tuple argument's types) lists: back to tuples."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _describe(exc: BaseException) -> str:
    """The compiler's message: the source excerpt with its caret, then the last line of each error inside it
    (a kernel's call into a helper that fails is reported at the call; why is further in)."""
    lines = [ln for ln in str(exc).strip().splitlines() if ln.strip()][-8:]
    inner, seen = exc.__cause__ or exc.__context__, 0
    while inner is not None and seen < 8:
        last = next((ln for ln in reversed(str(inner).strip().splitlines()) if ln.strip()), type(inner).__name__)
        if last not in lines:
            lines.append(last)
        inner, seen = inner.__cause__ or inner.__context__, seen + 1
    return "\n".join(lines)[-1500:] or type(exc).__name__


def _compile(ns: dict, ctx, target, backend, request: dict, path: str) -> dict:
    """The answer to one request: {"refused": the compiler's reason}, {"rule": why, "line": n} for a kernel that
    reads or makes an address (judge.untrusted.addresses), or {} when it compiles."""
    from triton.compiler import ASTSource
    from triton.compiler.errors import CompilationError

    fn = _jit_function(ns.get(request.get("kernel")))
    if fn is None:
        return {}  # not a kernel of the file: the replay says so itself
    signature = {k: _tuples(v) for k, v in request["signature"].items()}
    constexprs = {tuple(path): _restore(v) for path, v in request["constexprs"]}
    attrs = {tuple(path): v for path, v in request["attrs"]}
    options = backend.parse_options(dict(request.get("options") or {}))
    try:
        module = ASTSource(fn, signature, constexprs, attrs).make_ir(
            target, options, backend.get_codegen_implementation(options), backend.get_module_map(), ctx
        )
    except CompilationError as exc:  # the compiler's refusal is the finding
        return {"refused": _describe(exc)}
    # Anything else is this check failing, not the kernel: main() reports it on stderr and lets the launch run.
    return _address_rule(request.get("kernel"), str(module), path)


def _address_rule(kernel: str, ir_text: str, path: str) -> dict:
    import linecache

    from judge.untrusted import addresses

    found = addresses.conversions(ir_text, path)
    if not found:
        return {}
    message = addresses.refusal(kernel, ir_text, path, lambda n: linecache.getline(path, n))
    line = next((n for n, _ in sorted(found, key=lambda x: (x[0] is None, x[0] or 0))), None)
    return {"rule": message, "line": line}


def main() -> int:
    os.environ.pop("TRITON_INTERPRET", None)
    from triton._C.libtriton import ir

    from judge.untrusted.kernel_namespace import load_kernels

    ns, _, _ = load_kernels(sys.argv[1], interpret=False)
    target, backend = _target()
    ctx = ir.context()
    ir.load_dialects(ctx)
    backend.load_dialects(ctx)
    path = os.path.realpath(sys.argv[1])
    for line in sys.stdin:
        try:
            answer = _compile(ns, ctx, target, backend, json.loads(line), path)
        except Exception as exc:  # noqa: BLE001 - a request this side cannot carry out: not a finding
            print(f"frontend: {type(exc).__name__}: {exc}", file=sys.stderr)
            answer = {}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
