"""The launch sequence of one judged call, recorded so the judge can replay it alone.

While the entry point runs (judge.untrusted.guard.watching), this records:

* every launch of one of the file's own kernels, at ``JITFunction.run`` (an
  ``@triton.autotune`` or ``@triton.heuristics`` forwards there with its
  choice merged into the keyword arguments): the kernel's name, the grid as
  Triton resolved it, every argument as a value or a reference to memory, and
  the launch options;
* every PyTorch operator of the call that makes or writes memory
  (judge.shared.tracing.REPLAYED: allocations, fills, copies, casts, cat);
* the returned tensors, as references.

Memory is identified by storage: each input's storage (by argument index),
each storage an operator of the call made, and any other storage the call
used (made before the call, or outside PyTorch's dispatcher, e.g. by
``torch.frombuffer``): that is *outside* data, sent along with its bytes as
they were when the call first used it (up to judge.shared.tracing's budget).

The record is evidence from inside the submission's process, and could be
forged; that does not matter, because the judge does not believe it: it
replays the record in a process that never imports the submission, on fresh
inputs, and checks the answer (judge.replay). A record that does not compute
the answer there is a rejection, whatever produced it.
"""

from __future__ import annotations

import json

from judge.shared import tracing, wire


def _digest(st) -> bytes:
    import hashlib

    import torch

    raw = torch.empty(0, dtype=torch.uint8, device=st.device).set_(st).cpu().numpy().tobytes()
    return hashlib.blake2b(raw, digest_size=16).digest()


class Recorder:
    def __init__(self, inputs, device: str, deferred: bool = False):
        """``inputs``: (argument index, storage tensor) of each tensor argument of the call.

        ``deferred``: for the speed run's timed calls, where nothing may wait for the GPU while the call
        runs (a sample must be queued before the clock starts; a CUDA graph is being captured): no
        digests of the launches' memory, and the bytes of outside memory are read only when the judge
        asks for the record (:meth:`complete`, after timing), not when the call first uses it.
        """
        self.device = device
        self.deferred_mode = deferred
        self.deferred: list[tuple[dict, object]] = []  # (storage entry, storage) of outside memory, not yet read
        self.record: dict | None = None
        self.events: list[dict] = []
        self.storages: list[dict] = []
        # (device type, data_ptr) -> (id, nbytes, the StorageImpl's address): a block is known by all three.
        self.by_ptr: dict[tuple, tuple[int, int, int]] = {}
        # Storages seen, held (up to a budget) so that their addresses are not reused during the call.
        self.keep: list = []
        self.kept_bytes = 0
        self.snapshots: list[tuple[dict, bytes]] = []
        self.snapshot_bytes = 0
        self.truncated = ""
        self.pending: dict = {}  # id(launch event) -> [(storage id, storage, digest before the launch)]
        self.digested_bytes = 0
        inputs = [(index, storage.untyped_storage()) for index, storage in inputs]
        total = sum(st.nbytes() for _, st in inputs)
        self.budget = tracing.snapshot_budget(total)
        self.keep_budget = 2 * total + (64 << 20)
        for index, st in inputs:
            self._new(st, "input", arg=index)

    # ------------------------------------------------------------------ storages

    def _truncate(self, why: str) -> None:
        if not self.truncated:
            self.truncated = why
            # Nothing more is recorded: let go of what was held.
            self.keep.clear()
            self.snapshots.clear()

    def _new(self, st, origin: str, **extra) -> int:
        if len(self.storages) >= tracing.MAX_STORAGES:
            self._truncate(f"the call used more than {tracing.MAX_STORAGES} blocks of memory")
        if self.truncated:
            return -1
        sid = len(self.storages)
        nbytes = st.nbytes()
        entry = {
            "id": sid,
            "nbytes": nbytes,
            "device": st.device.type,
            "origin": origin if nbytes else "empty",
            **extra,
        }
        if entry["origin"] == "outside" and self.deferred_mode:
            entry["snapshot"] = False
            self.deferred.append((entry, st))
        elif entry["origin"] == "outside":
            entry["snapshot"] = self._snapshot(st)
        self.storages.append(entry)
        self.by_ptr[(st.device.type, st.data_ptr())] = (sid, nbytes, st._cdata)
        if self.kept_bytes + nbytes <= self.keep_budget:
            self.keep.append(st)
            self.kept_bytes += nbytes
        return sid

    def _snapshot(self, st) -> bool:
        import torch

        n = st.nbytes()
        if self.snapshot_bytes + n > self.budget:
            return False
        raw = torch.empty(0, dtype=torch.uint8, device=st.device).set_(st).cpu().numpy().tobytes()
        self.snapshots.append(({"dtype": "uint8", "shape": [n]}, raw))
        self.snapshot_bytes += n
        return True

    def storage_of(self, t) -> int:
        st = t.untyped_storage()
        hit = self.by_ptr.get((st.device.type, st.data_ptr()))
        if hit is not None and hit[1] == st.nbytes() and hit[2] == st._cdata:
            return hit[0]
        return self._new(st, "outside")

    def ref(self, t) -> dict:
        dtype = wire.dtype_name(t.dtype)
        if not wire.can_carry(dtype, t.device.type, ()):  # its shape is the record's to bound
            return {"opaque": f"a tensor of dtype {dtype} on {t.device.type}"}
        return {
            "ref": [
                self.storage_of(t),
                int(t.storage_offset()),
                [int(s) for s in t.shape],
                [int(s) for s in t.stride()],
                dtype,
            ]
        }

    # ------------------------------------------------------------------ values

    def value(self, v, depth: int = 0):
        import torch

        if v is None or isinstance(v, bool):
            return v
        if isinstance(v, str):
            if len(v) > tracing.MAX_STRING:
                return {"opaque": f"string of {len(v)} characters (at most {tracing.MAX_STRING} are recorded)"}
            return str.__str__(v)
        if isinstance(v, int):
            return int(v) if -(1 << 64) < v < (1 << 64) else {"opaque": "an integer over 64 bits"}
        if isinstance(v, float):
            return {"float": tracing.float_bits(float.__float__(v))}  # exactly: a NaN's payload too
        if isinstance(v, torch.Tensor):
            try:
                return self.ref(v)
            except Exception:  # noqa: BLE001 - e.g. a tensor with no memory of its own: not replayable, and said
                return {"opaque": "a tensor whose memory cannot be read"}
        if isinstance(v, (tuple, list)) and depth < tracing.MAX_DEPTH and len(v) <= tracing.MAX_SEQ:
            return {"tuple" if isinstance(v, tuple) else "list": [self.value(x, depth + 1) for x in v]}
        # A dtype or device the replay cannot make (float8, meta) is no value it replays.
        if isinstance(v, torch.dtype):
            name = wire.dtype_name(v)
            return {"torch_dtype": name} if name in wire.DTYPES else {"opaque": f"the dtype {name}"}
        if isinstance(v, torch.device):
            return {"device": str(v)} if v.type in wire.DEVICES else {"opaque": f"the device {v.type}"}
        if isinstance(v, torch.layout):
            return {"layout": str(v).removeprefix("torch.")}
        if isinstance(v, torch.memory_format):
            return {"memory_format": str(v).removeprefix("torch.")}
        try:
            import triton.language as tl
            from triton.tools.tensor_descriptor import TensorDescriptor

            if type(v) is TensorDescriptor:
                return {
                    "tensor_descriptor": {
                        "base": self.value(v.base, depth + 1),
                        "shape": [int(x) for x in v.shape],
                        "strides": [int(x) for x in v.strides],
                        "block_shape": [int(x) for x in v.block_shape],
                        "padding": str(v.padding),
                        "round_f32_to_tf32": bool(v.round_f32_to_tf32),
                    }
                }
            if isinstance(v, tl.constexpr):
                return {"constexpr": self.value(v.value, depth + 1)}
            if type(v) is tl.dtype:
                return {"tl_dtype": str(v)}
        except ImportError:  # pragma: no cover
            pass
        kind = type(v)
        return {"opaque": f"{kind.__module__}.{kind.__qualname__}"[: tracing.MAX_NAME]}

    # ------------------------------------------------------------------ events

    def _room(self) -> bool:
        if len(self.events) >= tracing.MAX_EVENTS:
            self._truncate(f"the call made more than {tracing.MAX_EVENTS} launches and copies")
        return not self.truncated

    def launch(self, name: str, args, kwargs, grid) -> dict | None:
        """Before a launch of one of the file's kernels: its record (the grid may be filled in later)."""
        if not self._room():
            return None
        event = {
            "k": "launch",
            "kernel": name[: tracing.MAX_NAME],
            "grid": None,
            "args": [self.value(a) for a in args],
            "kwargs": {str(k)[:100]: self.value(v) for k, v in kwargs.items() if k not in ("grid", "warmup")},
        }
        if not callable(grid):
            event["grid"] = self.grid(grid)
        self._watch_memory(event, list(args) + list(kwargs.values()))
        return event

    # The memory each launch was given, digested before and after it: which blocks it left as they were.
    # The replay shows that the recorded launches compute the outputs; this shows whether, in this process,
    # they did (a kernel that behaves otherwise here than replayed alone leaves the output as it was).

    def _watch_memory(self, event: dict, values) -> None:
        import torch

        blocks, stack = {}, list(values)
        while stack:
            v = stack.pop()
            if isinstance(v, torch.Tensor):
                st = v.untyped_storage()
                hit = self.by_ptr.get((st.device.type, st.data_ptr()))
                if hit is not None:
                    blocks[hit[0]] = st
            elif isinstance(v, (tuple, list)) and len(stack) < 4 * tracing.MAX_SEQ:
                stack.extend(v)
            elif type(v).__name__ == "TensorDescriptor" and type(v).__module__.startswith("triton."):
                stack.append(v.base)
        size = sum(st.nbytes() for st in blocks.values())
        if self.deferred_mode or not blocks or self.digested_bytes + 2 * size > 4 * self.budget:
            return  # over budget: this launch's writes are not known (the check that uses them is skipped)
        self.digested_bytes += 2 * size
        self.pending[id(event)] = [(sid, st, _digest(st)) for sid, st in blocks.items()]

    def written(self, event: dict | None) -> None:
        """After the launch returned: which of the blocks it was given it left unchanged."""
        watched = self.pending.pop(id(event), None) if event is not None else None
        if watched is not None:
            event["unchanged"] = sorted(sid for sid, st, before in watched if _digest(st) == before)

    @staticmethod
    def grid(grid):
        try:
            dims = [int(g) for g in tuple(grid)]
        except (TypeError, ValueError):
            return None
        return dims if 1 <= len(dims) <= 3 and all(0 <= g < (1 << 31) for g in dims) else None

    def launched(self, event: dict | None) -> None:
        """After the launch returned: the event takes its place (after what its callbacks did)."""
        if event is not None and event["grid"] is None:
            self._truncate(f"a launch of {event['kernel']} had a grid the record cannot describe")
        elif event is not None and self._room():
            self.events.append(event)

    def foreign(self, name: str) -> None:
        """A launch of a kernel defined outside the file: the replay cannot run it."""
        if self._room():
            self.events.append({"k": "foreign", "kernel": name[: tracing.MAX_NAME]})

    def op_before(self, func, args, kwargs):
        """Before a replayed operator runs: its arguments (outside storages are snapshotted now)."""
        if not self._room():
            return None
        return {
            "k": "op",
            "op": f"{func.overloadpacket.__name__}.{func._overloadname}",
            "args": [self.value(a) for a in args],
            "kwargs": {k: self.value(v) for k, v in kwargs.items()},
        }

    def op_after(self, event, func, result) -> None:
        import torch

        if event is None or self.truncated:
            return
        made = []
        items = list(result) if isinstance(result, (tuple, list)) else [result]
        for item in items:
            if not isinstance(item, torch.Tensor) or item.device.type not in wire.DEVICES:
                made.append(None)  # a meta tensor has no memory to record
                continue
            st = item.untyped_storage()
            known = self.by_ptr.get((st.device.type, st.data_ptr()))
            if func.overloadpacket.__name__ in tracing.MAKES and (
                known is None or known[1] != st.nbytes() or known[2] != st._cdata
            ):
                made.append(self._new(st, "made", event=len(self.events)))
            else:
                made.append(None)
        event["made"] = made
        if self._room():
            self.events.append(event)

    # ------------------------------------------------------------------ the end

    def finish(self, result) -> tuple[dict, list]:
        """(the record as JSON-able data, the snapshot frames to send after the outputs' frames)."""
        import torch

        items = list(result) if type(result) in (tuple, list) else [result]
        # A tensor the wire cannot carry (meta, float8) is recorded as no tensor: the output rule refuses it first.
        outputs = [self.value(x) if _carried(x, torch) else None for x in items[:16]]
        record = {"storages": self.storages, "events": self.events, "outputs": outputs, "truncated": self.truncated}
        if not self.truncated and len(json.dumps(record)) > tracing.MAX_JSON:
            self.truncated = f"the record of the call is over {tracing.MAX_JSON >> 10} KiB"
        if self.truncated:
            # Nothing of it will be replayed: send the reason alone.
            self.deferred.clear()
            self.record = {"storages": [], "events": [], "outputs": [], "truncated": self.truncated}
            return self.record, []
        self.record = record
        return record, list(self.snapshots)

    def release(self) -> None:
        """After the call: let go of the storages held against address reuse (a timed call's temporaries
        are freed when it returns, as without the record); outside memory still to be read stays held."""
        self.keep.clear()
        self.kept_bytes = 0

    def complete(self) -> tuple[dict, list]:
        """A deferred record with its outside memory's bytes, read now (within the snapshot budget)."""
        if self.record is None:
            return {"storages": [], "events": [], "outputs": [], "truncated": "the call was not recorded"}, []
        for entry, st in self.deferred:
            entry["snapshot"] = self._snapshot(st)
        self.deferred.clear()
        return self.record, list(self.snapshots)


def _carried(x, torch) -> bool:
    return type(x) is torch.Tensor and wire.can_carry(wire.dtype_name(x.dtype), str(x.device), x.shape)
