"""The record of a call (judge.shared.tracing's format), as a case or bench reply carries it, parsed and bounded."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from judge.replies.fields import MAX_OUTPUTS, MalformedReply, _bool, _int, _need, _obj, _text
from judge.replies.records import Tagged, TensorRef, Trace, TraceEvent, TraceStorage
from judge.shared import tracing, wire


def _snapshot_count(x) -> int:
    if not isinstance(x, dict) or not isinstance(x.get("storages"), list):
        return 0
    return sum(
        1
        for s in x["storages"][: tracing.MAX_STORAGES + 1]
        if isinstance(s, dict) and s.get("origin") == "outside" and s.get("snapshot") is True
    )


def _trace_value(x, what: str, depth: int = 0):
    if x is None or isinstance(x, bool):
        return x
    if isinstance(x, int):
        _need(-(1 << 64) < x < (1 << 64), f"{what}: an integer over 64 bits")
        return x
    if isinstance(x, float):
        return x  # infinities and NaN are values a kernel may be given
    if isinstance(x, str):
        _need(len(x) <= tracing.MAX_STRING, f"{what}: a string over {tracing.MAX_STRING} characters")
        return x
    _need(isinstance(x, dict) and len(x) == 1, f"{what}: a value must be a scalar or a tagged object")
    _need(depth < tracing.MAX_DEPTH, f"{what}: values nested deeper than {tracing.MAX_DEPTH}")
    tag, v = next(iter(x.items()))
    if tag == "ref":
        return _trace_ref(v, what)
    _need(tag in tracing.TAGS, f"{what}: unknown tag {str(tag)[:40]!r}")
    if tag in ("tuple", "list"):
        _need(isinstance(v, list) and len(v) <= tracing.MAX_SEQ, f"{what}: a {tag} of at most {tracing.MAX_SEQ} items")
        return Tagged(tag, tuple(_trace_value(i, what, depth + 1) for i in v))
    if tag == "constexpr":
        return Tagged(tag, _trace_value(v, what, depth + 1))
    if tag == "float":
        _need(
            isinstance(v, int) and not isinstance(v, bool) and 0 <= v < (1 << 64),
            f"{what}: a float's bits must be an integer of 64 bits",
        )
        return Tagged(tag, v)
    if tag == "tensor_descriptor":
        d = _obj(v, f"{what}: a tensor descriptor")
        base = _trace_value(d.get("base"), what, depth + 1)
        _need(isinstance(base, TensorRef), f"{what}: a tensor descriptor's base must be a tensor")
        dims = []
        for key in ("shape", "strides", "block_shape"):
            x = d.get(key)
            _need(isinstance(x, list) and 1 <= len(x) <= 5, f"{what}: a tensor descriptor's {key}: 1 to 5 sizes")
            dims.append(tuple(_int(i, f"{what}: a tensor descriptor's {key}", 0, 1 << 40) for i in x))
        _need(d.get("padding") in ("zero", "nan"), f"{what}: a tensor descriptor's padding")
        return Tagged(tag, (base, *dims, d["padding"], _bool(d.get("round_f32_to_tf32"), f"{what}: round_f32_to_tf32")))
    allowed = {
        "tl_dtype": tracing.TL_DTYPES,
        "torch_dtype": tuple(wire.DTYPES),
        "layout": tracing.LAYOUTS,
        "memory_format": tracing.MEMORY_FORMATS,
    }.get(tag)
    if allowed is not None:
        _need(v in allowed, f"{what}: unknown {tag} {str(v)[:40]!r}")
    elif tag == "device":
        _need(
            isinstance(v, str)
            and (v == "cpu" or v == "cuda" or (v.startswith("cuda:") and v[5:].isdigit() and len(v) < 12)),
            f"{what}: unknown device",
        )
    else:
        v = _text(v, f"{what}: opaque type")
    return Tagged(tag, v)


def _trace_ref(x, what: str) -> TensorRef:
    _need(
        isinstance(x, list) and len(x) == 5, f"{what}: a tensor reference is [storage, offset, shape, strides, dtype]"
    )
    sid, offset, shape, strides, dtype = x
    _need(
        isinstance(shape, list) and isinstance(strides, list) and len(shape) == len(strides) <= tracing.MAX_DIMS,
        f"{what}: a tensor reference's shape and strides must be lists of equal length, at most {tracing.MAX_DIMS}",
    )
    _need(dtype in wire.DTYPES, f"{what}: a tensor of dtype {str(dtype)[:20]!r}")
    return TensorRef(
        _int(sid, f"{what}: storage", 0, tracing.MAX_STORAGES),
        _int(offset, f"{what}: offset", 0, 1 << 40),
        tuple(_int(v, f"{what}: size", 0, 1 << 40) for v in shape),
        tuple(_int(v, f"{what}: stride", 0, 1 << 40) for v in strides),
        dtype,
    )


def _trace_kwargs(x, what: str) -> Mapping[str, object]:
    if x is None:
        return MappingProxyType({})
    _obj(x, what)
    _need(len(x) <= tracing.MAX_SEQ, f"{what}: more than {tracing.MAX_SEQ} keyword arguments")
    return MappingProxyType({_text(k, f"{what}: a keyword", 100): _trace_value(v, what) for k, v in x.items()})


def _trace_args(x, what: str) -> tuple:
    if x is None:
        return ()
    _need(isinstance(x, list) and len(x) <= tracing.MAX_SEQ, f"{what}: at most {tracing.MAX_SEQ} arguments")
    return tuple(_trace_value(v, what) for v in x)


def parse_trace(x, payloads: list) -> Trace | None:
    """The record of a call (judge.shared.tracing's format) with its outside memory's bytes, typed and bounded.

    Only its form is checked here; whether it adds up (references inside their
    memory, kernels of the file, inputs of the case's sizes) is judge.replay_input's.
    """
    if x is None:
        _need(not payloads, "memory frames without a record")
        return None
    t = _obj(x, "the record of the call")
    truncated = _text(t.get("truncated"), "the record's truncated", default="")
    storages_in = t.get("storages") or []
    events_in = t.get("events") or []
    outputs_in = t.get("outputs") or []
    _need(
        isinstance(storages_in, list) and len(storages_in) <= tracing.MAX_STORAGES + 1,
        f"the record holds at most {tracing.MAX_STORAGES} storages",
    )
    _need(
        isinstance(events_in, list) and len(events_in) <= tracing.MAX_EVENTS,
        f"the record holds at most {tracing.MAX_EVENTS} events",
    )
    _need(isinstance(outputs_in, list) and len(outputs_in) <= MAX_OUTPUTS, "the record's outputs must be a list")
    frames = iter(payloads)
    storages = []
    for i, s in enumerate(storages_in):
        s = _obj(s, "a storage of the record")
        _need(s.get("id") == i, "the record's storages must be numbered in order")
        origin = s.get("origin")
        _need(
            origin in ("input", "made", "outside", "empty"), "a storage's origin must be input, made, outside or empty"
        )
        device = s.get("device")
        _need(device in ("cpu", "cuda"), "a storage's device must be cpu or cuda")
        nbytes = _int(s.get("nbytes"), "a storage's size", 0, 1 << 40)
        arg = _int(s.get("arg"), "an input storage's argument", 0, 63) if origin == "input" else None
        event = _int(s.get("event"), "a made storage's event", 0, tracing.MAX_EVENTS) if origin == "made" else None
        snapshot = None
        if origin == "outside" and _bool(s.get("snapshot"), "a storage's snapshot"):
            snapshot = next(frames, None)
            _need(snapshot is not None and len(snapshot) == nbytes, "an outside storage's bytes do not match its size")
            snapshot = bytes(snapshot)  # a long frame arrives as a buffer (wire.Reader); the record holds bytes
        storages.append(TraceStorage(i, nbytes, device, origin, arg, event, snapshot))
    _need(next(frames, None) is None, "more memory frames than the record announces")
    events = []
    for i, e in enumerate(events_in):
        e = _obj(e, "an event of the record")
        kind = e.get("k")
        where = f"event {i + 1}"
        if kind == "launch":
            grid = e.get("grid")
            _need(isinstance(grid, list) and 1 <= len(grid) <= 3, f"{where}: a launch's grid must have 1 to 3 sizes")
            unchanged = e.get("unchanged")
            _need(
                unchanged is None or isinstance(unchanged, list) and len(unchanged) <= tracing.MAX_STORAGES,
                f"{where}: unchanged must be a list of storages",
            )
            events.append(
                TraceEvent(
                    "launch",
                    kernel=_text(e.get("kernel"), f"{where}: kernel"),
                    grid=tuple(_int(g, f"{where}: a grid size", 0, (1 << 31) - 1) for g in grid),
                    args=_trace_args(e.get("args"), where),
                    kwargs=_trace_kwargs(e.get("kwargs"), where),
                    unchanged=None
                    if unchanged is None
                    else tuple(_int(x, f"{where}: a storage", 0, tracing.MAX_STORAGES) for x in unchanged),
                )
            )
        elif kind == "op":
            op = _text(e.get("op"), f"{where}: operator")
            _need(op.split(".")[0] in tracing.REPLAYED, f"{where}: {op[:40]} is not an operator the replay redoes")
            made = e.get("made") or []
            _need(isinstance(made, list) and len(made) <= tracing.MAX_SEQ, f"{where}: made must be a list")
            events.append(
                TraceEvent(
                    "op",
                    op=op,
                    args=_trace_args(e.get("args"), where),
                    kwargs=_trace_kwargs(e.get("kwargs"), where),
                    made=tuple(None if m is None else _int(m, f"{where}: made", 0, tracing.MAX_STORAGES) for m in made),
                )
            )
        elif kind == "foreign":
            events.append(TraceEvent("foreign", kernel=_text(e.get("kernel"), f"{where}: kernel")))
        else:
            raise MalformedReply(f"{where}: unknown event kind {str(kind)[:40]!r}")
    outputs = tuple(None if o is None else _trace_value(o, "an output of the record") for o in outputs_in)
    _need(all(o is None or isinstance(o, TensorRef) for o in outputs), "the record's outputs must be tensor references")
    return Trace(tuple(storages), tuple(events), outputs, truncated)
