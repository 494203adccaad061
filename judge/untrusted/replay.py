"""The replay worker: a recorded launch sequence, run alone on fresh inputs.

``python -m judge.untrusted.replay`` is started by the judge (judge.replay)
through the same sandbox backend as the submission's worker, with the same
mounts and limits, and speaks the same protocol (judge.shared.wire). It never
imports the submission. It reads the file's source and compiles, from it,
only the top-level ``@triton.jit`` functions, ``@triton.constexpr_function``
helpers and constants (judge.shared.kernel_source; defined by
judge.untrusted.kernel_namespace), in a namespace that holds nothing but
``triton``, ``triton.language``, ``math`` and a few harmless built-ins: in
the interpreter a kernel body is Python, and this namespace is all it can
reach by name.

For each request it allocates fresh memory: the inputs hold the values the
judge sent (drawn from a new secret seed), memory from outside the call holds
the bytes the worker recorded, and every allocation is redone with the same
NaN fill the worker uses. It then redoes the recorded operators and launches
in order, and returns the outputs, with, for each, the last event that
changed its memory. A failure is reported as data (which event, what error);
the judge decides what it means.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import traceback

from judge.shared import niceness, tracing, wire
from judge.shared.oom import with_device_view
from judge.untrusted.errors import classify
from judge.untrusted.kernel_namespace import load_kernels
from judge.untrusted.worker_start import take_protocol_fds, warm_compiler


class ReplayError(Exception):
    """A request the replay cannot carry out: the record asks for something impossible."""


# --------------------------------------------------------------------------- one replay

ADDRESS_CHECKED: dict = {}  # id(compiled kernel) -> it: the GPU kernels whose IR was read (Replay._addresses)


def _refs(value, found: set) -> set:
    if isinstance(value, dict):
        if "ref" in value and isinstance(value["ref"], list) and value["ref"]:
            found.add(value["ref"][0])
        else:
            for v in value.values():
                _refs(v, found)
    elif isinstance(value, list):
        for v in value:
            _refs(v, found)
    return found


def _same(a, b) -> bool:
    """Bitwise equality of two tensors of one dtype and shape (NaN equals NaN)."""
    import torch

    if a is None or b is None:
        return a is b
    ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
    return torch.equal(a.contiguous().view(ints), b.contiguous().view(ints))


def compile_checker(path: str):
    """The GPU compiler's front end, in a child process without the interpreter (judge.untrusted.frontend),
    for checking interpreted launches; None where it cannot be started (said on stderr)."""
    try:
        from judge.untrusted.frontend import Checker

        return Checker(path)
    except Exception as exc:  # noqa: BLE001 - no front end (e.g. a Triton without the NVIDIA backend): not checked
        print(f"replay: the compile check is off: {type(exc).__name__}: {exc}", file=sys.stderr)
        return None


class CompileRefused(Exception):
    """The GPU compiler's front end refused a launched kernel."""


class RuleRefused(Exception):
    """A launched kernel reads or makes an address (judge.untrusted.addresses)."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.line = line


class Replay:
    def __init__(self, ns: dict, kernels: list[str], device: str, path: str, frontend=None):
        self.frontend = frontend
        self.ns = ns
        self.kernels = set(kernels)
        self.device = device
        self.path = path
        self.storages: dict = {}  # id -> torch.UntypedStorage
        self.sizes: dict = {}  # id -> nbytes the record gives
        self.address_checked = ADDRESS_CHECKED  # compiled kernels (GPU) whose IR was read for address operations

    # values --------------------------------------------------------------

    def view(self, ref):
        import torch

        if not (isinstance(ref, list) and len(ref) == 5):
            raise ReplayError("a malformed tensor reference")
        sid, offset, shape, strides, dtype = ref
        if dtype not in wire.DTYPES or sid not in self.storages:
            raise ReplayError(f"a reference to memory that does not exist (storage {sid})")
        if len(shape) != len(strides) or len(shape) > tracing.MAX_DIMS:
            raise ReplayError("a tensor reference with mismatched shape and strides")
        st = self.storages[sid]
        if (
            tracing.extent(offset, shape, strides) * wire.DTYPES[dtype] > st.nbytes()
            or offset < 0
            or any(s < 0 for s in list(shape) + list(strides))
        ):
            raise ReplayError(f"a tensor reference beyond its memory (storage {sid})")
        return torch.empty(0, dtype=getattr(torch, dtype), device=st.device).set_(st, offset, shape, strides)

    def value(self, v, depth: int = 0):
        import torch

        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if not isinstance(v, dict) or len(v) != 1 or depth > tracing.MAX_DEPTH:
            raise ReplayError("a malformed value")
        tag, x = next(iter(v.items()))
        if tag == "ref":
            return self.view(x)
        if tag in ("tuple", "list"):
            items = [self.value(i, depth + 1) for i in x]
            return tuple(items) if tag == "tuple" else items
        if tag == "constexpr":
            import triton.language as tl

            return tl.constexpr(self.value(x, depth + 1))
        if tag == "float":
            try:
                return tracing.bits_float(x)
            except ValueError as exc:
                raise ReplayError(str(exc)) from None
        if tag == "tensor_descriptor" and isinstance(x, dict):
            from triton.tools.tensor_descriptor import TensorDescriptor

            return TensorDescriptor(
                self.value(x.get("base"), depth + 1),
                list(x["shape"]),
                list(x["strides"]),
                list(x["block_shape"]),
                x.get("padding", "zero"),
                bool(x.get("round_f32_to_tf32")),
            )
        if tag == "tl_dtype" and x in tracing.TL_DTYPES:
            import triton.language as tl

            return tl.dtype(x)
        if tag == "torch_dtype" and x in wire.DTYPES:
            return getattr(torch, x)
        if tag == "device" and isinstance(x, str) and (x == "cpu" or x.startswith("cuda")):
            return torch.device(x)
        if tag == "layout" and x in tracing.LAYOUTS:
            return getattr(torch, x)
        if tag == "memory_format" and x in tracing.MEMORY_FORMATS:
            return getattr(torch, x)
        raise ReplayError(f"a value the replay cannot rebuild ({tag})")

    # events --------------------------------------------------------------

    def op(self, event):
        import torch

        name = str(event.get("op", ""))
        packet, _, overload = name.partition(".")
        if packet not in tracing.REPLAYED:
            raise ReplayError(f"the operator {name} is not one the replay redoes")
        func = getattr(getattr(torch.ops.aten, packet), overload or "default")
        args = [self.value(a) for a in event.get("args", [])]
        kwargs = {k: self.value(v) for k, v in event.get("kwargs", {}).items()}
        result = func(*args, **kwargs)
        items = list(result) if isinstance(result, (tuple, list)) else [result]
        for item, made in zip(items, event.get("made", [])):
            if made is None:
                continue
            if not isinstance(item, torch.Tensor) or made in self.storages:
                raise ReplayError(f"the operator {name} did not make the memory the record says")
            st = item.untyped_storage()
            if st.nbytes() != self.sizes.get(made):
                raise ReplayError(
                    f"the operator {name} made {st.nbytes()} bytes; the record says {self.sizes.get(made)}"
                )
            self.storages[made] = st

    def launch(self, event):
        from triton.runtime.jit import KernelInterface

        name = event.get("kernel")
        kernel = self.ns.get(name) if name in self.kernels else None
        if not isinstance(kernel, KernelInterface):
            raise ReplayError(f"{name} is not a @triton.jit function of the file")
        grid = event.get("grid")
        if not (isinstance(grid, list) and 1 <= len(grid) <= 3 and all(isinstance(g, int) for g in grid)):
            raise ReplayError("a launch without a grid")
        args = [self.value(a) for a in event.get("args", [])]
        kwargs = {k: self.value(v) for k, v in event.get("kwargs", {}).items()}
        if self.frontend is not None:
            refused = self.frontend.check(name, kernel, args, kwargs)
            if refused is not None and refused[0] == "rule":
                raise RuleRefused(refused[1], refused[2])
            if refused is not None:
                raise CompileRefused(refused[1])
        from triton.runtime.jit import JITFunction

        if isinstance(kernel, JITFunction) and not any(_is_dtype(a) for a in list(args) + list(kwargs.values())):
            # On a GPU the kernel is compiled (or found compiled) first, and its IR read, before it runs.
            try:
                ahead = kernel.warmup(*args, grid=tuple(grid), **kwargs)
            except Exception:  # noqa: BLE001 - the launch below compiles it, and says what fails
                ahead = None
            self._addresses(name, ahead)
        compiled = kernel[tuple(grid)](*args, **kwargs)
        self._addresses(name, compiled)

    def _addresses(self, name: str, compiled) -> None:
        """On a GPU, the Triton IR of a kernel the launch compiled (or found compiled), read once for operations
        that read or make an address (judge.untrusted.addresses; the interpreter's front end does so itself)."""
        asm = getattr(compiled, "asm", None)
        if not isinstance(asm, dict) or id(compiled) in self.address_checked:
            return
        self.address_checked[id(compiled)] = compiled  # (held: its id is not reused while it is known)
        ir_text = asm.get("ttir")
        if not isinstance(ir_text, str):
            return
        import linecache

        from judge.untrusted import addresses

        message = addresses.refusal(name, ir_text, self.path, lambda n: linecache.getline(self.path, n))
        if message is not None:
            self.address_checked.pop(id(compiled), None)  # refused again at its next launch
            found = addresses.conversions(ir_text, self.path)
            raise RuleRefused(message, next((n for n, _ in found if n is not None), None))

    # the request ---------------------------------------------------------

    def run(self, msg: dict, payloads: list):
        import torch

        trace = msg["trace"]
        frames = iter(payloads)
        made_here = self._bench_inputs(msg.get("bench"))
        for entry in trace["storages"]:
            sid, nbytes, origin = entry["id"], entry["nbytes"], entry["origin"]
            self.sizes[sid] = nbytes
            device = self.device if entry.get("device") != "cpu" else "cpu"
            if origin == "input" and made_here is not None:
                st = made_here.get(entry.get("arg"))
                if st is None or st.nbytes() != nbytes:
                    raise ReplayError(f"storage {sid} is not one of the timed call's inputs")
                self.storages[sid] = st
            elif origin in ("input", "outside"):
                raw = next(frames)
                if len(raw) != nbytes:
                    raise ReplayError(f"storage {sid} should hold {nbytes} bytes")
                data = (
                    torch.frombuffer(bytearray(raw), dtype=torch.uint8) if nbytes else torch.empty(0, dtype=torch.uint8)
                )
                self.storages[sid] = data.to(device).clone().untyped_storage()
            elif origin == "empty":
                self.storages[sid] = torch.empty(0, dtype=torch.uint8, device=device).untyped_storage()
        events = trace["events"]
        outputs = trace["outputs"]
        # Output i lives in storage watched[i]: which event last changed its values is reported.
        watched = {
            i: ref["ref"][0]
            for i, ref in enumerate(outputs)
            if isinstance(ref, dict) and isinstance(ref.get("ref"), list) and ref["ref"]
        }
        last_use = {}
        for k, event in enumerate(events):
            for sid in _refs(event, set()) | set(x for x in event.get("made", []) if x is not None):
                last_use[sid] = k
        writers: dict[int, int] = {}
        for k, event in enumerate(events):
            used = _refs(event, set()) | set(x for x in event.get("made", []) if x is not None)
            touched = [i for i, sid in watched.items() if sid in used]
            before = {i: self._output(outputs[i]) for i in touched if watched[i] in self.storages}
            try:
                if event.get("k") == "launch":
                    self.launch(event)
                elif event.get("k") == "op":
                    self.op(event)
                else:
                    raise ReplayError(f"an event the replay cannot redo ({event.get('k')})")
            except ReplayError as exc:
                return self._failed(k, "record", "ReplayError", str(exc))
            except CompileRefused as exc:
                return self._failed(k, "compile", "CompilationError", str(exc))
            except RuleRefused as exc:
                import linecache

                code = linecache.getline(self.path, exc.line).strip() if exc.line else ""
                return self._failed(k, "rule", "AddressOperation", str(exc), exc.line, code)
            except Exception as exc:  # noqa: BLE001 - the kernel or operator failed on fresh inputs
                err = classify(exc, self.path)
                return self._failed(k, "run", err["type"], err["message"], err.get("line"), err.get("code", ""))
            for i in touched:
                if i not in before or not _same(before[i], self._output(outputs[i])):
                    writers[i] = k
            for sid in [s for s, last in last_use.items() if last == k and s not in watched.values()]:
                self.storages.pop(sid, None)
        described, tensors, writer_list = [], [], []
        try:
            for i, ref in enumerate(outputs):
                if i not in watched:
                    described.append({"kind": "other"})
                    writer_list.append(None)
                    continue
                view = self.view(ref["ref"])
                described.append(
                    {
                        "kind": "tensor",
                        "dtype": wire.dtype_name(view.dtype),
                        "shape": list(view.shape),
                        "device": str(view.device),
                    }
                )
                tensors.append(wire.tensor_to_wire(view))
                writer_list.append(writers.get(i))
        except ReplayError as exc:
            return self._failed(len(events), "record", "ReplayError", str(exc))
        return {"status": "ok", "outputs": described, "writers": writer_list}, tensors

    def _bench_inputs(self, bench) -> dict | None:
        """A timed call's fresh inputs, made here from the judge's description and seed
        (judge.shared.bench_inputs, as the bench worker makes them): argument index -> storage. Large
        inputs need not cross the pipe; the seed is new, and nothing of the submission's Python runs here."""
        if bench is None:
            return None
        import torch

        from judge.shared import bench_inputs
        from judge.untrusted import determinism

        # Made as the bench worker makes them, where timed calls run without deterministic algorithms or
        # the NaN fill: the same values, bit for bit, as the judge's copy for the golden model.
        saved = determinism.switch(torch, False)
        try:
            args = bench_inputs.make(bench["specs"], int(bench["seed"]), self.device)
        finally:
            determinism.restore(torch, saved)
        return {i: a.untyped_storage() for i, a in enumerate(args) if isinstance(a, torch.Tensor)}

    def _output(self, ref):
        try:
            return self.view(ref["ref"]).clone()
        except (ReplayError, KeyError):
            return None

    @staticmethod
    def _failed(k, kind, type_, message, line=None, code=""):
        # (with_device_view: a full device's CUDA error gets the figures the judge reads, judge.shared.oom)
        return {
            "status": "error",
            "event": k,
            "kind": kind,
            "error": {"type": type_, "message": with_device_view(str(message))[:4000], "line": line, "code": code},
        }, []


# --------------------------------------------------------------------------- main


class _Shape:
    """A tensor argument of a launch in the compile pass: its dtype and its address modulo the storage's
    (aligned) base, which is all Triton specializes a pointer on (the 16-byte divisibility)."""

    def __init__(self, dtype, offset_bytes: int):
        self.dtype = dtype
        self._ptr = offset_bytes

    def data_ptr(self) -> int:
        return self._ptr


class CompilePass(Replay):
    """Compile the recorded launches' kernels without running them (Triton's ``JITFunction.warmup``), so that
    the replay proper, which the judge runs with the GPU taken shared, finds them compiled. Its compiles are
    CPU work: done here, before the judge asks for the GPU, they no longer keep a speed run waiting (a replay
    holds the GPU shared through its compiles: seconds each, with a dozen judges on one GPU; docs/measurements,
    the speed run's schedule).

    Each compiled kernel also gets its launcher and its module loaded (a copy of its code to the device; no
    kernel runs), the rest of what a first launch sets up. Nothing is allocated: a tensor is a stand-in with
    its dtype and its offset, on a base aligned as a fresh allocation is. A launch it cannot stand in for (a tensor descriptor, say) is left to the replay proper,
    which compiles what is missing; nothing here decides anything."""

    def view(self, ref):
        if not (isinstance(ref, list) and len(ref) == 5):
            raise ReplayError("a malformed tensor reference")
        sid, offset, _shape, _strides, dtype = ref
        if dtype not in wire.DTYPES or sid not in self.sizes or not isinstance(offset, int) or offset < 0:
            raise ReplayError(f"a reference to memory that does not exist (storage {sid})")
        import torch

        return _Shape(getattr(torch, dtype), offset * wire.DTYPES[dtype])

    def compile_all(self, msg: dict) -> dict:
        from triton.runtime.jit import JITFunction

        trace = msg["trace"]
        for entry in trace["storages"]:
            self.sizes[entry["id"]] = entry["nbytes"]
        before = cached_kernels(self.ns, self.kernels)
        failed = 0
        for event in trace["events"]:
            if event.get("k") != "launch":
                continue
            name = event.get("kernel")
            kernel = self.ns.get(name) if name in self.kernels else None
            grid = event.get("grid")
            if not isinstance(kernel, JITFunction) or not isinstance(grid, list):
                continue
            try:
                args = [self.value(a) for a in event.get("args", [])]
                kwargs = {k: self.value(v) for k, v in event.get("kwargs", {}).items()}
                if any(_is_dtype(a) for a in list(args) + list(kwargs.values())):
                    continue  # warmup() would take a torch dtype for a tensor of it: not the launch's kernel
                compiled = kernel.warmup(*args, grid=tuple(grid), **kwargs)
                # Its launcher (a C stub Triton builds, or loads from its cache, at a kernel's first launch) and
                # its module loaded on the device: the rest of a first launch's set-up, also done here.
                init = getattr(compiled, "_init_handles", None)
                if callable(init):
                    init()
            except Exception:  # noqa: BLE001 - the replay proper compiles it, and says what fails
                failed += 1
        after = cached_kernels(self.ns, self.kernels)
        return {
            "status": "ok",
            "compiled": max(0, after - before) if after is not None and before is not None else -1,
            "failed": failed,
        }


def _is_dtype(value) -> bool:
    return value.__class__.__name__ == "dtype" and value.__class__.__module__ == "torch"


def cached_kernels(ns: dict, kernels: set) -> int | None:
    """How many compiled kernels the file's @triton.jit functions hold in this process (Triton's per-device
    caches), or None where this Triton keeps them otherwise: before and after a request, how many it compiled."""
    from triton.runtime.jit import JITFunction

    total = 0
    try:
        for name in kernels:
            k = ns.get(name)
            if isinstance(k, JITFunction):
                for entry in getattr(k, "device_caches", {}).values():
                    cache = entry[0] if isinstance(entry, tuple) else None
                    if not isinstance(cache, dict):
                        return None
                    total += len(cache)
    except Exception:  # noqa: BLE001 - another Triton's layout: no count
        return None
    return total


def _yield_cores(seconds: float):
    """Import at the lowest CPU priority (judge.sandbox.base.yields_cores says why): this session's autogroup
    at nice 19. The function that gives the inherited priority back (judge.shared.niceness), which main()
    calls once the imports are done; a timer calls it after ``seconds`` at the latest. None when the priority
    could not be lowered. Giving it back goes on trying for seconds (the kernel's rate limit on autogroup
    writes), since staying low on a busy host could starve this worker."""
    if not niceness.set_session(19, tries=3):
        return None
    lock = threading.Lock()
    state = {"low": True}
    inherited = max(0, niceness.own())

    def back() -> None:
        with lock:
            if state["low"]:
                state["low"] = not niceness.set_session(inherited, tries=50)

    timer = threading.Timer(max(0.0, float(seconds)), back)
    timer.daemon = True
    timer.start()
    return back


def main() -> int:
    t0 = time.perf_counter()
    proto_in, proto_out = take_protocol_fds()
    reader = wire.Reader(proto_in)
    # The same start as the submission's worker (judge.untrusted.runner): "prepare" (interpreter flag,
    # device) before torch is imported, "ready", then "setup" naming the file, which a pooled replay
    # worker (judge.pool) gets only when the judge hands it one.
    prep, _ = reader.recv(0)
    if prep.get("type") != "prepare":
        return 2
    nonce = prep["nonce"]
    interpret = bool(prep.get("interpret"))
    back = _yield_cores(prep.get("yield_seconds", 2.0)) if prep.get("yield_cores") is True else None
    if back is None:
        niceness.inherit()
    if interpret:
        os.environ["TRITON_INTERPRET"] = "1"
    else:
        os.environ.pop("TRITON_INTERPRET", None)
    import torch

    from judge.untrusted import determinism

    # Fresh memory reads as NaN, as in the worker: an allocation is replayed with the same fill.
    determinism.switch(torch, True)
    import triton

    warm_compiler(interpret)
    if back is not None:
        back()  # imported: the normal priority again, before any replay is asked of this worker
    from judge.untrusted import lockdown

    lockdown.apply()  # (after the priority is back: that is a write to /proc/self/autogroup)

    def reply(message: dict, tensors=None):
        message["nonce"] = nonce
        wire.send(proto_out, message, tensors)

    reply({"type": "ready"})
    t_ready = time.perf_counter()
    setup, _ = reader.recv(0)
    if setup.get("type") != "setup" or setup.get("nonce") != nonce:
        return 2
    setup = {**prep, **setup}
    if setup.get("threads"):
        torch.set_num_threads(int(setup["threads"]))
    t1 = time.perf_counter()
    path = os.path.realpath(setup["submission"])
    device = setup.get("device", "cpu")
    try:
        ns, kernels, skipped = load_kernels(path, interpret)
    except BaseException as exc:  # noqa: BLE001 - e.g. an unreadable file: said in the hello
        reply(
            {
                "type": "hello",
                "status": "error",
                "versions": {},
                "device_name": "?",
                "error": {"category": "runtime", "type": type(exc).__name__, "message": str(exc)[:2000]},
            }
        )
        return 0
    for line in skipped:
        print(f"replay: not defined: {line}", file=sys.stderr)
    # In the interpreter a kernel body is Python and runs whatever Python does; on a GPU it must compile.
    frontend = compile_checker(path) if interpret and setup.get("compile_check", True) else None
    reply(
        {
            "type": "hello",
            "status": "ok",
            "versions": {"python": sys.version.split()[0], "torch": torch.__version__, "triton": triton.__version__},
            "device_name": torch.cuda.get_device_name() if device.startswith("cuda") else "cpu",
            "startup": {
                "imports_seconds": round(t_ready - t0, 4),
                "waited_seconds": round(t1 - t_ready, 4),
                "load_seconds": round(time.perf_counter() - t1, 4),
            },
        }
    )
    while True:
        msg, payloads = reader.recv(1 << 40)
        if msg.get("nonce") != nonce:
            return 2
        if msg.get("type") == "exit":
            os._exit(0)  # nothing to tear down: skip the interpreter's (torch's) slow shutdown
        if msg.get("type") == "compile" and not interpret:
            t_c = time.perf_counter()
            try:
                result = CompilePass(ns, kernels, device, path).compile_all(msg)
            except BaseException as exc:  # noqa: BLE001 - a malformed request: the replay proper says it
                result = {"status": "ok", "compiled": 0, "failed": 1}
                print(f"replay: compile pass: {type(exc).__name__}: {exc}", file=sys.stderr)
            reply({"type": "compiled", "id": msg.get("id"), **result, "seconds": round(time.perf_counter() - t_c, 4)})
            continue
        if msg.get("type") != "replay":
            return 2
        before = cached_kernels(ns, kernels) if not interpret else None
        try:
            result, tensors = Replay(ns, kernels, device, path, frontend).run(msg, payloads)
        except BaseException as exc:  # noqa: BLE001 - a malformed request: said, not fatal
            traceback.print_exc()
            result, tensors = Replay._failed(-1, "record", type(exc).__name__, str(exc))
        after = cached_kernels(ns, kernels) if before is not None else None
        if after is not None and result.get("status") == "ok":
            result["compiled"] = max(0, after - before)  # the kernels this replay compiled (none, after the pass)
        reply({"type": "replay_result", "id": msg.get("id"), **result}, tensors)
        del tensors
        if device.startswith("cuda") and torch.cuda.is_initialized() and torch.cuda.memory_reserved() > 1 << 30:
            # A replayed bench shape's memory, cached: other judges' work on a shared GPU needs it (as
            # judge.kit.release_cached in the judge).
            torch.cuda.empty_cache()
        if device.startswith("cuda") and result.get("status") == "error" and "CUDA error" in str(result):
            return 0  # the context is gone: the judge starts a fresh replay worker


if __name__ == "__main__":
    sys.exit(main())
