"""The parsers: each reads one kind of worker message, bounded, into a record of judge.replies.records."""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType

from judge.replies.records import (
    PHASES,
    BenchError,
    BenchOutputs,
    BenchResult,
    BenchTrimmed,
    CaseError,
    CaseResult,
    CompileResult,
    ErrorInfo,
    Evidence,
    Frame,
    Hello,
    KernelInfo,
    ProfileResult,
    ProfileSample,
    ReplayResult,
    Returned,
    Tagged,
    TensorRef,
    Trace,
    TraceEvent,
    TraceStorage,
)
from judge.shared import tracing, wire

MAX_TEXT = 4000  # an error message
MAX_NAME = 300  # a kernel, operator, type or thread name
MAX_ENTRIES = 256  # entries of a count table or a list of names
MAX_COUNT = 1 << 40
MAX_OUTPUTS = 17  # the worker describes at most 16 returned items, plus one "... more" entry
MAX_FRAMES = 16
MAX_SAMPLES = 100_000  # timed calls in one bench reply
CATEGORIES = ("compile", "memory", "runtime", "rule", "contract", "capacity")


class MalformedReply(Exception):
    """A reply that is not what the protocol allows: a forged or broken worker (RJ)."""


# --------------------------------------------------------------------------- primitives


def _need(ok: bool, what: str) -> None:
    if not ok:
        raise MalformedReply(what)


def _obj(x, what: str) -> dict:
    _need(isinstance(x, dict), f"{what} must be an object")
    return x


def _text(x, what: str, limit: int = MAX_NAME, default: str | None = None) -> str:
    """A string of the reply, bounded, and printable: a control character (an escape sequence for the
    terminal), a NUL or a lone surrogate (no UTF-8 encoder takes it: the results store, a platform's JSON
    file) becomes "?", as the report's human form shows it. A red team's exception message carried all three."""
    if x is None and default is not None:
        return default
    _need(isinstance(x, str), f"{what} must be a string")
    x = x[:limit]
    if x.isprintable():
        return x
    return "".join(ch if ch in "\n\t" or ch.isprintable() else "?" for ch in x)


def _int(x, what: str, lo: int = 0, hi: int = MAX_COUNT, default: int | None = None) -> int:
    if x is None and default is not None:
        return default
    _need(
        isinstance(x, int) and not isinstance(x, bool) and lo <= x <= hi, f"{what} must be an integer in [{lo}, {hi}]"
    )
    return x


def _opt_int(x, what: str, lo: int = -1, hi: int = MAX_COUNT) -> int | None:
    return None if x is None else _int(x, what, lo, hi)


def _float(x, what: str, default: float | None = None) -> float:
    if x is None and default is not None:
        return default
    _need(
        isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and abs(x) < 1e12,
        f"{what} must be a finite number",
    )
    return float(x)


def _bool(x, what: str) -> bool:
    if x is None:
        return False
    _need(isinstance(x, bool), f"{what} must be true or false")
    return x


def _counts(x, what: str) -> Mapping[str, int]:
    if x is None:
        return MappingProxyType({})
    _obj(x, what)
    _need(len(x) <= MAX_ENTRIES, f"{what} has more than {MAX_ENTRIES} entries")
    return MappingProxyType({_text(k, f"a key of {what}"): _int(v, f"{what}[{k[:40]!r}]") for k, v in x.items()})


def _names(x, what: str) -> tuple[str, ...]:
    if x is None:
        return ()
    _need(isinstance(x, list) and len(x) <= MAX_ENTRIES, f"{what} must be a list of at most {MAX_ENTRIES} names")
    return tuple(_text(v, f"an item of {what}") for v in x)


def _floats(x, what: str, limit: int = MAX_SAMPLES) -> tuple[float, ...]:
    if x is None:
        return ()
    _need(isinstance(x, list) and len(x) <= limit, f"{what} must be a list of at most {limit} numbers")
    return tuple(_float(v, f"an item of {what}") for v in x)


def _ints(x, what: str, limit: int = MAX_SAMPLES) -> tuple[int, ...]:
    if x is None:
        return ()
    _need(isinstance(x, list) and len(x) <= limit, f"{what} must be a list of at most {limit} integers")
    return tuple(_int(v, f"an item of {what}") for v in x)


def _bools(x, what: str, limit: int = MAX_SAMPLES) -> tuple[bool, ...]:
    if x is None:
        return ()
    _need(isinstance(x, list) and len(x) <= limit, f"{what} must be a list of at most {limit} booleans")
    return tuple(_bool(v, f"an item of {what}") for v in x)


def _kind(msg: dict, *allowed: str) -> str:
    kind = msg.get("type")
    _need(kind in allowed, f"expected a {' or '.join(allowed)} message, got {str(kind)[:40]!r}")
    return kind


def _no_tensors(msg: dict, payloads: list) -> None:
    _need(not payloads, "this message may carry no tensors")


# --------------------------------------------------------------------------- parts


def parse_error(x) -> ErrorInfo:
    e = _obj(x, "error")
    category = e.get("category", "runtime")
    _need(category in CATEGORIES, f"error category must be one of {', '.join(CATEGORIES)}")
    frames = e.get("frames") or []
    _need(
        isinstance(frames, list) and len(frames) <= MAX_FRAMES, f"error frames must be a list of at most {MAX_FRAMES}"
    )
    parsed = []
    for f in frames:
        f = _obj(f, "a frame")
        parsed.append(
            Frame(
                _int(f.get("line"), "a frame's line", 0, 10**7),
                _text(f.get("function"), "a frame's function", default=""),
                _text(f.get("code"), "a frame's code", default=""),
            )
        )
    return ErrorInfo(
        category=category,
        type=_text(e.get("type"), "error type", default="Error"),
        message=_text(e.get("message"), "error message", MAX_TEXT, default=""),
        line=_opt_int(e.get("line"), "error line", 0, 10**7),
        code=_text(e.get("code"), "error code", default=""),
        frames=tuple(parsed),
        fatal=_bool(e.get("fatal"), "error fatal"),
        at_import=_bool(e.get("at_import"), "error at_import"),
        at_register=_bool(e.get("at_register"), "error at_register"),
        hint=_text(e.get("hint"), "error hint", MAX_TEXT, default=""),
    )


def parse_evidence(x) -> Evidence:
    if x is None:
        return Evidence()
    ev = _obj(x, "evidence")
    compile_ = ev.get("compile")
    compiled = seconds = None
    if compile_ is not None:
        compile_ = _obj(compile_, "evidence.compile")
        compiled = _int(compile_.get("compiled"), "compiled kernels", default=0)
        seconds = _float(compile_.get("compile_seconds"), "compile seconds", default=0.0)
    return Evidence(
        own_launches=_counts(ev.get("own_launches"), "own_launches"),
        other_launches=_counts(ev.get("other_launches"), "other_launches"),
        torch_ops=_counts(ev.get("torch_ops"), "torch_ops"),
        started=_counts(ev.get("started"), "started"),
        tampered=_names(ev.get("tampered"), "tampered"),
        threads_left=_names(ev.get("threads_left"), "threads_left"),
        calls_without_own_launch=_int(ev.get("calls_without_own_launch"), "calls_without_own_launch", default=0),
        compiled=compiled,
        compile_seconds=seconds,
        own_ops=_counts(ev.get("own_ops"), "own_ops"),
        graph_ops=None if ev.get("graph_ops") is None else _names(ev.get("graph_ops"), "graph_ops"),
        phases=_phases(ev.get("phases")),
    )


def _phases(x) -> Mapping[str, float]:
    if x is None:
        return MappingProxyType({})
    _obj(x, "evidence.phases")
    _need(set(x) <= set(PHASES), f"evidence.phases may name only {', '.join(PHASES)}")
    out = {k: _float(v, f"evidence.phases[{k!r}]") for k, v in x.items()}
    _need(all(v >= 0 for v in out.values()), "evidence.phases must not be negative")
    return MappingProxyType(out)


def parse_outputs(items, payloads: list) -> tuple[Returned, ...]:
    """The returned items; each tensor item takes the next tensor frame, whose bytes must match it."""
    from judge.shared import wire

    _need(isinstance(items, list) and len(items) <= MAX_OUTPUTS, f"outputs must be a list of at most {MAX_OUTPUTS}")
    frames = iter(payloads)
    out = []
    for item in items:
        o = _obj(item, "an output")
        kind = o.get("kind")
        _need(kind in ("tensor", "other"), "an output's kind must be 'tensor' or 'other'")
        if kind == "other":
            out.append(
                Returned(
                    "other",
                    type=_text(o.get("type"), "an output's type", default="?"),
                    tensor_subclass=_bool(o.get("tensor_subclass"), "tensor_subclass"),
                )
            )
            continue
        desc = {"dtype": o.get("dtype"), "shape": o.get("shape")}
        try:
            size = wire.tensor_nbytes(desc)
        except wire.ProtocolError as exc:
            raise MalformedReply(f"an output tensor: {exc}") from None
        raw = next(frames, None)
        _need(raw is not None, "an output tensor has no bytes")
        _need(len(raw) == size, f"an output tensor holds {len(raw)} bytes; its shape and dtype need {size}")
        out.append(
            Returned(
                "tensor",
                dtype=desc["dtype"],
                shape=tuple(desc["shape"]),
                device=_text(o.get("device"), "an output's device", 40, default=""),
                kernel_wrote=_bool(o.get("kernel_wrote"), "kernel_wrote"),
                aliases_input=_bool(o.get("aliases_input"), "aliases_input"),
                derived=_bool(o.get("derived"), "derived"),
                tensor=wire.tensor_from_wire(desc, raw),
            )
        )
    _need(next(frames, None) is None, "more tensor frames than tensor outputs")
    return tuple(out)


# --------------------------------------------------------------------------- messages


def parse_hello(msg: dict, payloads: list) -> Hello:
    _kind(msg, "hello")
    _no_tensors(msg, payloads)
    versions = _obj(msg.get("versions") or {}, "versions")
    _need(len(versions) <= 16, "too many versions")
    startup = _obj(msg.get("startup") or {}, "startup")
    _need(len(startup) <= 16, "too many start-up figures")
    ok = msg.get("status") == "ok"
    _need(msg.get("status") in ("ok", "error"), "hello status must be 'ok' or 'error'")
    return Hello(
        ok=ok,
        versions=MappingProxyType(
            {_text(k, "a version name", 40): _text(v, "a version", 80) for k, v in versions.items()}
        ),
        device_name=_text(msg.get("device_name"), "device_name", default="?"),
        error=None if ok else parse_error(msg.get("error") or {}),
        startup=MappingProxyType(
            {_text(k, "a start-up key", 40): _float(v, "a start-up time") for k, v in startup.items()}
        ),
    )


def parse_case_reply(msg: dict, payloads: list, expect_id: int | None = None) -> CaseResult | CaseError:
    _kind(msg, "result")
    case_id = _int(msg.get("id"), "id")
    _need(expect_id is None or case_id == expect_id, f"a reply to case {case_id} came for case {expect_id}")
    if msg.get("status") == "error":
        _no_tensors(msg, payloads)
        return CaseError(case_id, parse_error(msg.get("error") or {}), parse_evidence(msg.get("evidence")))
    _need(msg.get("status") == "ok", "status must be 'ok' or 'error'")
    # The outputs' frames come first; the frames of the record's outside memory follow them.
    snapshots = _snapshot_count(msg.get("trace"))
    _need(snapshots <= len(payloads), "the record of the call announces more memory than the reply carries")
    split = len(payloads) - snapshots
    return CaseResult(
        id=case_id,
        returned=_text(msg.get("returned"), "returned", default="?"),
        outputs=parse_outputs(msg.get("outputs") or [], payloads[:split]),
        inputs_modified=_ints(msg.get("inputs_modified"), "inputs_modified", 64),
        evidence=parse_evidence(msg.get("evidence")),
        trace=parse_trace(msg.get("trace"), payloads[split:]),
    )


# --------------------------------------------------------------------------- the record of a call


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


def parse_replay_reply(msg: dict, payloads: list, expect_id: int | None = None) -> ReplayResult:
    _kind(msg, "replay_result")
    rid = _int(msg.get("id"), "id")
    _need(expect_id is None or rid == expect_id, f"a reply to replay {rid} came for replay {expect_id}")
    if msg.get("status") == "error":
        _no_tensors(msg, payloads)
        kind = msg.get("kind")
        _need(
            kind in ("record", "run", "compile", "rule"),
            "a failed replay's kind must be 'record', 'run', 'compile' or 'rule'",
        )
        return ReplayResult(
            rid,
            False,
            event=_int(msg.get("event"), "event", -1, tracing.MAX_EVENTS),
            kind=kind,
            error=parse_error(dict(_obj(msg.get("error") or {}, "error"), category="runtime")),
        )
    _need(msg.get("status") == "ok", "status must be 'ok' or 'error'")
    outputs = parse_outputs(msg.get("outputs") or [], payloads)
    writers = msg.get("writers") or []
    _need(isinstance(writers, list) and len(writers) == len(outputs), "one writer per output")
    return ReplayResult(
        rid,
        True,
        outputs,
        tuple(None if w is None else _int(w, "writer", 0, tracing.MAX_EVENTS) for w in writers),
        compiled=_int(msg.get("compiled"), "compiled", -1, tracing.MAX_EVENTS, default=-1),
    )


def parse_compile_reply(msg: dict, payloads: list, expect_id: int | None = None) -> CompileResult:
    _kind(msg, "compiled")
    _no_tensors(msg, payloads)
    rid = _int(msg.get("id"), "id")
    _need(expect_id is None or rid == expect_id, f"a reply to compile pass {rid} came for {expect_id}")
    _need(msg.get("status") == "ok", "status must be 'ok'")
    return CompileResult(
        rid,
        _int(msg.get("compiled"), "compiled", -1, tracing.MAX_EVENTS, default=-1),
        _int(msg.get("failed"), "failed", 0, tracing.MAX_EVENTS, default=0),
        _float(msg.get("seconds"), "seconds", default=0.0),
    )


PROFILE_STATUS = ("ok", "no kernels", "unavailable", "cpu")


def parse_profile(x) -> ProfileResult | None:
    if x is None:
        return None
    p = _obj(x, "profile")
    status = p.get("status")
    _need(status in PROFILE_STATUS, "unknown profile status")
    items = p.get("samples") or []
    _need(isinstance(items, list) and len(items) <= MAX_ENTRIES, "profile samples must be a short list")
    samples = []
    for item in items:
        item = _obj(item, "a profile sample")
        samples.append(
            ProfileSample(
                span_s=_float(item.get("span_s"), "span_s", default=0.0),
                busy_s=_float(item.get("busy_s"), "busy_s", default=0.0),
                kernels=_int(item.get("kernels"), "kernels", default=0),
                calls=_floats(item.get("calls"), "calls", MAX_ENTRIES),
                ranges=_int(item.get("ranges"), "ranges", default=0),
            )
        )
    return ProfileResult(
        status=status,
        note=_text(p.get("note"), "profile note", MAX_TEXT, default=""),
        method=_text(p.get("method"), "profile method", default=""),
        samples=tuple(samples),
        records=_int(p.get("records"), "profile records", default=0),
    )


def parse_bench_reply(msg: dict, payloads: list) -> BenchResult | BenchError:
    _kind(msg, "bench_result")
    _no_tensors(msg, payloads)
    if msg.get("status") == "error":
        return BenchError(parse_error(msg.get("error") or {}))
    _need(msg.get("status") == "ok", "status must be 'ok' or 'error'")
    mode = msg.get("mode")
    _need(mode in ("events", "graph", "cpu", "queued"), "unknown timing mode")
    kernels = msg.get("kernels") or []
    _need(isinstance(kernels, list) and len(kernels) <= MAX_ENTRIES, "kernels must be a list")
    parsed_kernels = []
    for k in kernels:
        k = _obj(k, "a kernel")
        parsed_kernels.append(
            KernelInfo(
                name=_text(k.get("name"), "a kernel's name", default="?"),
                own=_bool(k.get("own"), "own"),
                registers=_opt_int(k.get("registers"), "registers"),
                spills=_opt_int(k.get("spills"), "spills"),
                shared_bytes=_opt_int(k.get("shared_bytes"), "shared_bytes"),
                num_warps=_opt_int(k.get("num_warps"), "num_warps"),
                num_stages=_opt_int(k.get("num_stages"), "num_stages"),
            )
        )
    known = {
        "type",
        "id",
        "status",
        "shape",
        "mode",
        "times",
        "host",
        "overhead",
        "device_times",
        "sync_gaps",
        "checkable",
        "out_bytes",
        "worker_wall",
        "note",
        "evidence",
        "kernels",
        "compile",
        "nonce",
        "tensors",
        "per_sample",
        "valid",
        "retries",
        "invalid",
        "hold_s",
        "holds",
        "enqueue",
        "attempts",
        "profile",
    }
    extra = {}
    for key, value in msg.items():
        if key in known:
            continue
        _need(isinstance(key, str) and len(key) <= 40 and len(extra) < 32, "too many or too long extra fields")
        if isinstance(value, list):
            extra[key] = _floats(value, key)
        elif value is None or isinstance(value, (bool, str)):
            extra[key] = value if not isinstance(value, str) else value[:MAX_NAME]
        else:
            extra[key] = _float(value, key)
    return BenchResult(
        mode=mode,
        times=_floats(msg.get("times"), "times"),
        host=_floats(msg.get("host"), "host"),
        overhead=_floats(msg.get("overhead"), "overhead"),
        device_times=_floats(msg.get("device_times"), "device_times"),
        sync_gaps=_floats(msg.get("sync_gaps"), "sync_gaps"),
        checkable=_ints(msg.get("checkable"), "checkable"),
        out_bytes=_int(msg.get("out_bytes"), "out_bytes", default=0),
        worker_wall=_float(msg.get("worker_wall"), "worker_wall", default=0.0),
        note=_text(msg.get("note"), "note", MAX_TEXT, default=""),
        evidence=parse_evidence(msg.get("evidence")),
        kernels=tuple(parsed_kernels),
        per_sample=_int(msg.get("per_sample"), "per_sample", 1, 1 << 16, default=1),
        valid=_bools(msg.get("valid"), "valid"),
        retries=_int(msg.get("retries"), "retries", default=0),
        invalid=_int(msg.get("invalid"), "invalid", default=0),
        hold_s=_float(msg.get("hold_s"), "hold_s", default=0.0),
        holds=_floats(msg.get("holds"), "holds"),
        enqueue=_floats(msg.get("enqueue"), "enqueue"),
        attempts=_ints(msg.get("attempts"), "attempts"),
        profile=parse_profile(msg.get("profile")),
        extra=MappingProxyType(extra),
    )


def parse_bench_trimmed(msg: dict, payloads: list) -> BenchTrimmed | BenchError:
    _kind(msg, "bench_trimmed")
    _no_tensors(msg, payloads)
    status = msg.get("status")
    if status == "error":
        return BenchError(parse_error(msg.get("error") or {}))
    _need(status == "ok", "status must be 'ok' or 'error'")
    return BenchTrimmed()


def parse_bench_outputs(msg: dict, payloads: list) -> BenchOutputs | BenchError:
    _kind(msg, "bench_outputs")
    status = msg.get("status")
    if status == "error":
        _no_tensors(msg, payloads)
        return BenchError(parse_error(msg.get("error") or {}))
    if status == "missing":
        _no_tensors(msg, payloads)
        return BenchOutputs(present=False)
    _need(status == "ok", "status must be 'ok', 'missing' or 'error'")
    # As in a case's reply: the outputs' frames, then those of the record's outside memory.
    snapshots = _snapshot_count(msg.get("trace"))
    _need(snapshots <= len(payloads), "the record of the call announces more memory than the reply carries")
    split = len(payloads) - snapshots
    return BenchOutputs(
        present=True,
        returned=_text(msg.get("returned"), "returned", default="?"),
        outputs=parse_outputs(msg.get("outputs") or [], payloads[:split]),
        trace=parse_trace(msg.get("trace"), payloads[split:]),
    )
