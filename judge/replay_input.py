"""What a replay is given: a call's record, checked before anything runs (validate) and written out for the
replay worker (encode), and the fresh inputs it runs on (fresh_inputs); outside_source follows memory from outside
the call through a record. judge.replay runs the replay and judges what it computed."""

from __future__ import annotations

import secrets

from judge import kit
from judge.cases import canonical, derive_seed
from judge.replies import records
from judge.shared import tracing
from judge.verdicts import Verdict

NOTE = "replay not possible"  # how every note of a call not replayed begins


# --------------------------------------------------------------------------- checking the record


def _walk(value):
    """Every TensorRef and Tagged inside a recorded value."""
    if isinstance(value, (records.TensorRef, records.Tagged)):
        yield value
    if isinstance(value, records.Tagged) and value.tag in ("tuple", "list"):
        for v in value.value:
            yield from _walk(v)
    if isinstance(value, records.Tagged) and value.tag == "constexpr":
        yield from _walk(value.value)
    if isinstance(value, records.Tagged) and value.tag == "tensor_descriptor":
        yield from _walk(value.value[0])


def _values(event: records.TraceEvent):
    for v in list(event.args) + list(event.kwargs.values()):
        yield from _walk(v)


def tensor_refs(event: records.TraceEvent) -> list[records.TensorRef]:
    return [v for v in _values(event) if isinstance(v, records.TensorRef)]


def label(trace: records.Trace, index: int) -> str:
    return tracing.event_label(
        [{"k": e.kind, "kernel": e.kernel, "grid": e.grid, "op": e.op} for e in trace.events], index
    )


def validate(
    trace: records.Trace, kernels: set[str], input_sizes: dict[int, int], device: str, file: str
) -> tuple[str, str] | None:
    """Why this record cannot be replayed: (Verdict.RJ, message) or ("note", message); None when it can."""
    if trace.truncated:
        return "note", f"{NOTE}: {trace.truncated}"
    device_type = "cuda" if device.startswith("cuda") else "cpu"
    storages = trace.storages
    seen_args = set()
    for s in storages:
        if s.device not in ("cpu", device_type):
            return (
                Verdict.RJ,
                f"the record of the call is not consistent: memory on {s.device} in a run on {device_type}",
            )
        if s.origin == "input":
            if s.arg not in input_sizes or s.arg in seen_args or input_sizes[s.arg] != s.nbytes:
                return Verdict.RJ, (
                    "the record of the call is not consistent: its inputs are not the case's "
                    "(a forged or tampered record)"
                )
            seen_args.add(s.arg)
        elif s.origin == "made":
            e = trace.events[s.event] if s.event < len(trace.events) else None
            if e is None or e.kind != "op" or s.id not in e.made:
                return (
                    Verdict.RJ,
                    "the record of the call is not consistent: memory made by an event that did not make it",
                )
    if seen_args != set(input_sizes):
        return Verdict.RJ, "the record of the call is not consistent: it lacks some of the case's inputs"

    def check_ref(ref: records.TensorRef, at: int, what: str) -> tuple[str, str] | None:
        if ref.storage >= len(storages):
            return Verdict.RJ, f"the record of the call is not consistent: {what} uses memory it never describes"
        s = storages[ref.storage]
        if s.origin == "made" and s.event >= at:
            return Verdict.RJ, f"the record of the call is not consistent: {what} uses memory before it was made"
        need = tracing.extent(ref.offset, ref.shape, ref.strides) * tracing.itemsize(ref.dtype)
        if need > s.nbytes:
            return Verdict.RJ, f"the record of the call is not consistent: {what} reaches beyond its memory"
        if s.origin == "outside" and s.snapshot is None:
            return Verdict.RJ, (
                f"data from outside your kernels reached {what}: {s.nbytes} bytes of memory that no "
                "allocation or copy of the call made (all data must come from the inputs through your "
                "kernels)"
            )
        return None

    for i, e in enumerate(trace.events):
        if e.kind == "foreign":
            return Verdict.RJ, (
                f"the call launched {e.kernel}, a kernel not defined in {file}: only your file's kernels "
                "may compute the answer"
            )
        where = label(trace, i)
        if e.kind == "launch" and e.kernel not in kernels:
            return Verdict.RJ, (
                f"{where}: {e.kernel} is not a top-level @triton.jit function of {file} (kernels are "
                "replayed from the file's source, so they must be defined there at top level)"
            )
        for v in _values(e):
            if isinstance(v, records.Tagged) and v.tag == "opaque":
                if str(v.value).startswith("triton.") or "tensor of dtype" in str(v.value):
                    return "note", f"{NOTE}: {where} was given {v.value}, which the replay does not rebuild"
                return Verdict.RJ, (
                    f"{where} was given a {v.value}: a Triton kernel takes tensors, numbers, booleans, "
                    "strings, dtypes and tuples of those"
                )
            if isinstance(v, records.TensorRef):
                found = check_ref(v, i, where)
                if found is not None:
                    return found
        for m in e.made:
            if m is not None and (m >= len(storages) or storages[m].origin != "made" or storages[m].event != i):
                return Verdict.RJ, "the record of the call is not consistent: an operator made memory the record lacks"
    for n, ref in enumerate(trace.outputs):
        if ref is not None:
            found = check_ref(ref, len(trace.events), f"output {n + 1}")
            if found is not None:
                return found
    return None


def outside_source(trace: records.Trace, storage: int) -> tuple[bool, int | None]:
    """Whether memory from outside the call can have reached ``storage``, and the first event that brought it there.

    Conservative: a launch may have written any tensor it was given.
    (False, None): no; (True, None): the storage is itself outside memory; (True, k): through event k.
    """
    tainted: dict[int, int | None] = {s.id: None for s in trace.storages if s.origin == "outside"}
    for k, e in enumerate(trace.events):
        refs = {r.storage for r in tensor_refs(e)}
        if not refs & tainted.keys():
            continue
        writes = set(refs) if e.kind == "launch" else {m for m in e.made if m is not None}
        if (
            e.kind == "op"
            and e.op.split(".")[0] in tracing.WRITES
            and e.args
            and isinstance(e.args[0], records.TensorRef)
        ):
            writes.add(e.args[0].storage)
        out = e.kwargs.get("out")
        if isinstance(out, records.TensorRef):
            writes.add(out.storage)
        # Named by the event where outside memory first came in on this path.
        first = min(k if tainted[r] is None else tainted[r] for r in refs if r in tainted)
        for w in writes:
            tainted.setdefault(w, first)
    return (storage in tainted), tainted.get(storage)


# --------------------------------------------------------------------------- the wire, both ways


def _encode(value):
    if isinstance(value, records.TensorRef):
        return value.as_wire()
    if isinstance(value, records.Tagged):
        if value.tag in ("tuple", "list"):
            return {value.tag: [_encode(v) for v in value.value]}
        if value.tag == "constexpr":
            return {"constexpr": _encode(value.value)}
        if value.tag == "tensor_descriptor":
            base, shape, strides, block, padding, rnd = value.value
            return {
                "tensor_descriptor": {
                    "base": base.as_wire(),
                    "shape": list(shape),
                    "strides": list(strides),
                    "block_shape": list(block),
                    "padding": padding,
                    "round_f32_to_tf32": rnd,
                }
            }
        return {value.tag: value.value}
    return value


def encode(trace: records.Trace) -> tuple[dict, list]:
    """The record as the replay worker reads it, without the bytes (which travel as frames)."""
    storages = []
    for s in trace.storages:
        entry = {"id": s.id, "nbytes": s.nbytes, "device": s.device, "origin": s.origin}
        if s.origin == "input":
            entry["arg"] = s.arg
        elif s.origin == "made":
            entry["event"] = s.event
        elif s.origin == "outside":
            entry["snapshot"] = s.snapshot is not None
        storages.append(entry)
    events = []
    for e in trace.events:
        base = {"args": [_encode(a) for a in e.args], "kwargs": {k: _encode(v) for k, v in e.kwargs.items()}}
        if e.kind == "launch":
            events.append({"k": "launch", "kernel": e.kernel, "grid": list(e.grid or ()), **base})
        else:
            events.append({"k": "op", "op": e.op, "made": list(e.made), **base})
    outputs = [None if o is None else o.as_wire() for o in trace.outputs]
    return {"storages": storages, "events": events, "outputs": outputs}, []


def fresh_inputs(problem, params: dict, original: list, run_seed: int | None = None) -> tuple[dict, list] | None:
    """The case's inputs again, with new values from a new seed: same layouts, same scalars.

    The new seed is derived from the run's seed and the case (``run_seed``; None: the OS's randomness): as
    secret as the cases' own seeds, which the worker never sees either, and the same in every run with that
    seed. A kernel wrong on some values only is found out by the replay's values now and then (the corpus's
    96 wrong_answer/stats_in_input_dtype.py: a group earlier than the drawn cases' failure, one run in
    several); with fresh values from the OS that made a fixed seed's group results differ
    from run to run, whatever the number of workers.

    (the fresh case's parameters, its inputs); None if the problem's make_inputs
    gives another layout for another seed (then a record of the first layout
    means nothing for the second).
    """
    seed = derive_seed("replay", secrets.token_hex(16) if run_seed is None else run_seed, canonical(params))
    fresh_params = dict(params, seed=seed)
    fresh = problem.golden.make_inputs(dict(fresh_params), kit.generator(seed))
    if len(fresh) != len(original):
        return None
    out = []
    for a, b in zip(original, fresh):
        if isinstance(a, kit.TensorInput):
            if not (
                isinstance(b, kit.TensorInput)
                and b.dtype == a.dtype
                and b.values.shape == a.values.shape
                and b.strides() == a.strides()
                and b.offset == a.offset
                and b.storage_numel() == a.storage_numel()
            ):
                return None
            out.append(b)
        else:
            out.append(a)  # a scalar is part of the case, not of its data
    return fresh_params, out
