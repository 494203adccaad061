"""One request of the replay worker (judge.untrusted.replay): the recorded call run again, alone.

The record's memory is rebuilt on fresh allocations (the inputs hold the values
the judge sent, memory from outside the call the bytes the worker recorded,
every allocation the same NaN fill the worker uses), then its operators and
launches are redone in order (Replay.run); on a GPU a compile pass over the
record's launches comes first (CompilePass). The worker's start and its loop of
requests stay in judge.untrusted.replay, which hands each request here.
"""

from __future__ import annotations

from judge.shared import tracing, wire
from judge.shared.oom import with_device_view
from judge.untrusted.errors import classify


class ReplayError(Exception):
    """A request the replay cannot carry out: the record asks for something impossible."""


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
