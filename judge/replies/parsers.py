"""The parsers: each reads one kind of worker message, bounded, into a record of judge.replies.records."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from judge.replies.fields import (
    CATEGORIES,
    MAX_ENTRIES,
    MAX_FRAMES,
    MAX_NAME,
    MAX_OUTPUTS,
    MAX_TEXT,
    MalformedReply,
    _bool,
    _bools,
    _counts,
    _float,
    _floats,
    _int,
    _ints,
    _kind,
    _names,
    _need,
    _no_tensors,
    _obj,
    _opt_int,
    _text,
)
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
)
from judge.replies.trace import _snapshot_count, parse_trace
from judge.shared import tracing, wire

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
        if o.get("sent") is False:
            out.append(_unsent(o))
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


def _unsent(o: dict) -> Returned:
    """A returned tensor described without its values: only one whose dtype, device or shape the wire cannot carry
    (judge.shared.wire.can_carry), so that every tensor the output rule compares has its values."""
    dtype = _text(o.get("dtype"), "an output's dtype", 40)
    device = _text(o.get("device"), "an output's device", 40)
    try:
        wire.check_shape(o.get("shape"), wire.MAX_DESCRIBED_DIMS, 1 << 63)
    except wire.ProtocolError as exc:
        raise MalformedReply(f"an output tensor: {exc}") from None
    _need(not wire.can_carry(dtype, device, o["shape"]), "an output tensor the wire can carry came without its bytes")
    return Returned(
        "tensor", dtype=dtype, shape=tuple(o["shape"]), device=device, derived=_bool(o.get("derived"), "derived")
    )


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
