"""The boundary parser: every reply is a typed record or a MalformedReply, never anything else.

The fuzz tests drive each parser with random JSON values and with valid
replies broken in one place; the judge must turn every one of them into a
verdict (MalformedReply -> RJ), never an exception of its own (IE).
"""

import json
import tempfile

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from judge.replies import fields, parsers, records
from judge.shared import wire

OK_CASE = {
    "type": "result",
    "id": 3,
    "status": "ok",
    "returned": "torch.Tensor",
    "outputs": [
        {
            "kind": "tensor",
            "dtype": "float32",
            "shape": [2],
            "strides": [1],
            "device": "cpu",
            "kernel_wrote": True,
            "aliases_input": False,
        }
    ],
    "inputs_modified": [],
    "evidence": {
        "own_launches": {"add_kernel": 1},
        "other_launches": {},
        "torch_ops": {},
        "threads_before": 1,
        "threads_left": [],
        "tampered": [],
        "started": {},
        "compile": {"compiled": 1, "compile_seconds": 0.1},
        "phases": {"inputs": 0.01, "call": 0.2, "after": 0.03},
    },
}
PAYLOAD = [torch.tensor([1.0, 2.0]).numpy().tobytes()]
OK_HELLO = {
    "type": "hello",
    "status": "ok",
    "versions": {"python": "3.11", "torch": "2.13", "triton": "3.9"},
    "device_name": "cpu",
    "startup": {"imports_seconds": 1.0, "load_seconds": 0.1},
}
OK_BENCH = {
    "type": "bench_result",
    "id": "0",
    "status": "ok",
    "shape": 0,
    "mode": "events",
    "out_bytes": 8,
    "times": [1e-5, 1.1e-5],
    "host": [2e-5, 2e-5],
    "overhead": [1e-6],
    "device_times": [],
    "sync_gaps": [],
    "checkable": [0, 1],
    "evidence": {"own_launches": {"k": 2}, "calls_without_own_launch": 0},
    "kernels": [
        {"name": "k", "own": True, "registers": 32, "spills": 0, "shared_bytes": 0, "num_warps": 4, "num_stages": 2}
    ],
    "worker_wall": 0.01,
}
TRACE = {
    "storages": [
        {"id": 0, "nbytes": 8, "device": "cpu", "origin": "input", "arg": 0},
        {"id": 1, "nbytes": 8, "device": "cpu", "origin": "made", "event": 0},
        {"id": 2, "nbytes": 4, "device": "cpu", "origin": "outside", "snapshot": True},
    ],
    "events": [
        {
            "k": "op",
            "op": "empty.memory_format",
            "args": [{"list": [2]}],
            "kwargs": {"dtype": {"torch_dtype": "float32"}, "device": {"device": "cpu"}},
            "made": [1],
        },
        {
            "k": "launch",
            "kernel": "add_kernel",
            "grid": [1],
            "args": [
                {"ref": [0, 0, [2], [1], "float32"]},
                {"ref": [1, 0, [2], [1], "float32"]},
                {"ref": [2, 0, [1], [1], "float32"]},
                2,
                1.5,
                True,
                None,
                {"tuple": [1, {"tl_dtype": "fp32"}]},
            ],
            "kwargs": {"BLOCK": {"constexpr": 128}, "num_warps": 4},
        },
    ],
    "outputs": [{"ref": [1, 0, [2], [1], "float32"]}],
    "truncated": "",
}
OK_CASE_TRACE = dict(OK_CASE, trace=TRACE)
SNAPSHOT = [b"\0\0\0\0"]
OK_REPLAY = {
    "type": "replay_result",
    "id": 3,
    "status": "ok",
    "writers": [1],
    "outputs": [{"kind": "tensor", "dtype": "float32", "shape": [2], "device": "cpu"}],
}
OK_COMPILED = {"type": "compiled", "id": 3, "status": "ok", "compiled": 2, "failed": 0, "seconds": 1.25}
PARSERS = [
    parsers.parse_case_reply,
    parsers.parse_hello,
    parsers.parse_bench_reply,
    parsers.parse_bench_outputs,
    parsers.parse_replay_reply,
    parsers.parse_compile_reply,
]


def test_a_good_case_reply_becomes_a_record():
    r = parsers.parse_case_reply(OK_CASE, PAYLOAD, expect_id=3)
    assert isinstance(r, records.CaseResult)
    assert r.outputs[0].kernel_wrote and r.outputs[0].tensor.tolist() == [1.0, 2.0]
    assert dict(r.evidence.own_launches) == {"add_kernel": 1} and r.evidence.compiled == 1
    assert dict(r.evidence.phases) == {"inputs": 0.01, "call": 0.2, "after": 0.03}
    assert r.tensors()[0].dtype == torch.float32


def test_good_hello_and_bench_replies():
    assert parsers.parse_hello(OK_HELLO, []).ok
    b = parsers.parse_bench_reply(OK_BENCH, [])
    assert b.times == (1e-5, 1.1e-5) and b.kernels[0].registers == 32 and b.checkable == (0, 1)


@pytest.mark.parametrize(
    "broken,why",
    [
        (dict(OK_CASE, outputs=["not an object"]), "an output must be an object"),
        (dict(OK_CASE, outputs=[dict(OK_CASE["outputs"][0], shape=[3])]), "bytes"),
        (dict(OK_CASE, outputs=[dict(OK_CASE["outputs"][0], dtype="complex64")]), "dtype"),
        (dict(OK_CASE, id=4), "case 3"),
        (dict(OK_CASE, evidence={"own_launches": {"k": -1}}), "integer"),
        (dict(OK_CASE, evidence={"own_launches": ["k"]}), "object"),
        (dict(OK_CASE, evidence={"tampered": "everything"}), "list"),
        (dict(OK_CASE, evidence={"own_launches": {f"k{i}": 1 for i in range(300)}}), "entries"),
        (dict(OK_CASE, evidence={"phases": {"call": -1.0}}), "negative"),
        (dict(OK_CASE, evidence={"phases": {"sleep": 1.0}}), "may name only"),
        (dict(OK_CASE, evidence={"phases": {"call": float("nan")}}), "finite"),
        (dict(OK_CASE, status="maybe"), "status"),
        (dict(OK_CASE, type="hello"), "expected a result"),
        (dict(OK_CASE, status="error", error={"category": "anything"}), "category"),
        (dict(OK_CASE, status="error", error={"category": "runtime", "frames": [1, 2]}), "frame"),
    ],
)
def test_malformed_case_replies_are_named(broken, why):
    payloads = [] if broken.get("status") == "error" else PAYLOAD
    with pytest.raises(fields.MalformedReply, match=why):
        parsers.parse_case_reply(broken, payloads, expect_id=3)


def test_a_case_reply_carries_the_record_of_its_call():
    r = parsers.parse_case_reply(OK_CASE_TRACE, PAYLOAD + SNAPSHOT, expect_id=3)
    assert r.outputs[0].tensor.tolist() == [1.0, 2.0]
    t = r.trace
    assert [s.origin for s in t.storages] == ["input", "made", "outside"] and t.storages[2].snapshot == SNAPSHOT[0]
    launch = t.events[1]
    assert launch.kernel == "add_kernel" and launch.grid == (1,) and launch.args[3:7] == (2, 1.5, True, None)
    assert launch.args[0] == records.TensorRef(0, 0, (2,), (1,), "float32")
    assert launch.kwargs["BLOCK"] == records.Tagged("constexpr", 128)
    assert t.outputs == (records.TensorRef(1, 0, (2,), (1,), "float32"),)
    r2 = parsers.parse_replay_reply(OK_REPLAY, PAYLOAD, expect_id=3)
    assert r2.ok and r2.writers == (1,) and r2.outputs[0].tensor.tolist() == [1.0, 2.0]
    assert r2.compiled == -1  # not counted (the interpreter's replay worker compiles nothing)
    assert parsers.parse_replay_reply(dict(OK_REPLAY, compiled=0), PAYLOAD, expect_id=3).compiled == 0


def test_the_replay_workers_compile_pass_reply_is_counts_and_seconds_only():
    c = parsers.parse_compile_reply(OK_COMPILED, [], expect_id=3)
    assert (c.compiled, c.failed, c.seconds) == (2, 0, 1.25)
    for bad, frames in (
        (dict(OK_COMPILED, id=4), []),
        (OK_COMPILED, PAYLOAD),
        (dict(OK_COMPILED, compiled=-2), []),
        (dict(OK_COMPILED, failed=True), []),
        (dict(OK_COMPILED, status="error"), []),
        (dict(OK_COMPILED, seconds=float("nan")), []),
        (dict(OK_COMPILED, type="replay_result"), []),
    ):
        with pytest.raises(fields.MalformedReply):
            parsers.parse_compile_reply(bad, frames, expect_id=3)


def _with(path, value, base=TRACE):
    trace = json.loads(json.dumps(base))
    node = trace
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return dict(OK_CASE, trace=trace)


@pytest.mark.parametrize(
    "broken,frames,why",
    [
        (OK_CASE_TRACE, PAYLOAD, "has no bytes"),
        (OK_CASE_TRACE, [], "more memory than the reply carries"),
        (OK_CASE_TRACE, PAYLOAD + SNAPSHOT * 2, "more tensor frames"),
        (_with(["storages", 2, "nbytes"], 8), PAYLOAD + SNAPSHOT, "do not match"),
        (_with(["storages", 1, "id"], 5), PAYLOAD + SNAPSHOT, "numbered in order"),
        (_with(["storages", 0, "origin"], "elsewhere"), PAYLOAD + SNAPSHOT, "origin"),
        (_with(["events", 0, "op"], "add.Tensor"), PAYLOAD + SNAPSHOT, "not an operator the replay redoes"),
        (_with(["events", 1, "grid"], [1, 2, 3, 4]), PAYLOAD + SNAPSHOT, "grid"),
        (_with(["events", 1, "grid"], [1 << 40]), PAYLOAD + SNAPSHOT, "grid size"),
        (_with(["events", 1, "k"], "exec"), PAYLOAD + SNAPSHOT, "unknown event kind"),
        (_with(["events", 1, "args", 0], {"ref": [0, 0, [2], [1, 1], "float32"]}), PAYLOAD + SNAPSHOT, "equal length"),
        (_with(["events", 1, "args", 0], {"ref": [0, 0, [2], [1], "complex64"]}), PAYLOAD + SNAPSHOT, "dtype"),
        (_with(["events", 1, "args", 0], {"eval": "1+1"}), PAYLOAD + SNAPSHOT, "unknown tag"),
        (
            _with(["events", 1, "args", 0], {"tuple": [{"tuple": [{"tuple": [{"tuple": [{"tuple": []}]}]}]}]}),
            PAYLOAD + SNAPSHOT,
            "nested deeper",
        ),
        (_with(["events", 1, "args", 0], [1, 2]), PAYLOAD + SNAPSHOT, "scalar or a tagged object"),
        (_with(["events", 1, "args", 0], 1 << 70), PAYLOAD + SNAPSHOT, "64 bits"),
        (_with(["events", 1, "args", 0], {"device": "../etc"}), PAYLOAD + SNAPSHOT, "device"),
        (_with(["events"], [{"k": "foreign"}] * (parsers.tracing.MAX_EVENTS + 1)), PAYLOAD + SNAPSHOT, "at most"),
        (_with(["outputs", 0], 3), PAYLOAD + SNAPSHOT, "tensor references"),
    ],
)
def test_malformed_records_are_named(broken, frames, why):
    with pytest.raises(fields.MalformedReply, match=why):
        parsers.parse_case_reply(broken, frames, expect_id=3)


def test_extra_tensor_frames_are_refused():
    with pytest.raises(fields.MalformedReply, match="more tensor frames"):
        parsers.parse_case_reply(OK_CASE, PAYLOAD * 2, expect_id=3)


def test_long_strings_are_cut_not_carried():
    r = parsers.parse_case_reply(
        dict(OK_CASE, status="error", error={"category": "runtime", "message": "x" * 10**6}), [], expect_id=3
    )
    assert len(r.error.message) == fields.MAX_TEXT


def test_strings_come_out_printable_and_encodable():
    # A red team's exception message (2026-12-03): lone surrogates (no UTF-8 encoder takes them: the results
    # store, a platform's JSON file), an escape sequence for the terminal, a NUL.
    message = "bad \ud800\udcff surrogate \x1b[31m red\x00 end\nnext\tline"
    r = parsers.parse_case_reply(
        dict(OK_CASE, status="error", error={"category": "runtime", "message": message}), [], expect_id=3
    )
    assert r.error.message == "bad ?? surrogate ?[31m red? end\nnext\tline"
    r.error.message.encode("utf-8")


def test_deeply_nested_json_is_a_protocol_error_not_a_crash():
    deep = b'{"type": "hello", "x": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    with tempfile.TemporaryFile() as f:  # a pipe would block on a frame this size with no reader
        wire.write_frame(f.fileno(), deep)
        f.seek(0)
        with pytest.raises(wire.ProtocolError, match="RecursionError"):
            wire.Reader(f.fileno()).recv(0)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=30,
)
KEYS = [
    "type",
    "id",
    "status",
    "returned",
    "outputs",
    "inputs_modified",
    "evidence",
    "error",
    "versions",
    "device_name",
    "startup",
    "mode",
    "times",
    "host",
    "overhead",
    "checkable",
    "kernels",
    "out_bytes",
    "worker_wall",
    "note",
    "own_launches",
    "torch_ops",
    "tampered",
    "started",
    "frames",
    "category",
    "trace",
    "storages",
    "events",
    "origin",
    "nbytes",
    "snapshot",
    "arg",
    "event",
    "k",
    "kernel",
    "grid",
    "args",
    "kwargs",
    "made",
    "op",
    "ref",
    "tuple",
    "constexpr",
    "writers",
    "kind",
    "truncated",
    "compiled",
    "failed",
    "seconds",
]


def _parse_or_malformed(parser, message, payloads):
    try:
        expect = (
            {"expect_id": 3}
            if parser in (parsers.parse_case_reply, parsers.parse_replay_reply, parsers.parse_compile_reply)
            else {}
        )
        result = parser(message, payloads, **expect)
    except fields.MalformedReply:
        return None
    json.dumps(getattr(result, "__dict__", {}), default=str)  # a record is plain, printable data
    return result


@settings(max_examples=300, deadline=None)
@given(
    message=st.dictionaries(st.sampled_from(KEYS), JSON, max_size=8),
    payloads=st.lists(st.binary(max_size=16), max_size=3),
)
def test_fuzz_random_messages(message, payloads):
    for parser in PARSERS:
        _parse_or_malformed(parser, message, payloads)


@settings(max_examples=300, deadline=None)
@given(
    base=st.sampled_from([OK_CASE, OK_HELLO, OK_BENCH, OK_CASE_TRACE, OK_REPLAY, OK_COMPILED]),
    path=st.lists(st.sampled_from(KEYS + [0, 1, 2]), min_size=1, max_size=6),
    value=JSON,
    frames=st.sampled_from([PAYLOAD, PAYLOAD + SNAPSHOT, PAYLOAD + SNAPSHOT * 2, []]),
)
def test_fuzz_valid_replies_broken_in_one_place(base, path, value, frames):
    message = json.loads(json.dumps(base))
    node = message
    for key in path[:-1]:
        nxt = (
            node.get(key)
            if isinstance(node, dict)
            else (node[key] if isinstance(node, list) and isinstance(key, int) and key < len(node) else None)
        )
        if not isinstance(nxt, (dict, list)):
            break
        node = nxt
    last = path[-1]
    if isinstance(node, dict):
        node[last] = value
    elif isinstance(node, list) and isinstance(last, int) and last < len(node):
        node[last] = value
    for parser in PARSERS:
        _parse_or_malformed(parser, message, frames)
