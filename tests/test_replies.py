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

from judge import replies
from judge.shared import wire

OK_CASE = {
    "type": "result", "id": 3, "status": "ok", "returned": "torch.Tensor",
    "outputs": [{"kind": "tensor", "dtype": "float32", "shape": [2], "strides": [1], "device": "cpu",
                 "kernel_wrote": True, "aliases_input": False}],
    "inputs_modified": [],
    "evidence": {"own_launches": {"add_kernel": 1}, "other_launches": {}, "torch_ops": {}, "threads_before": 1,
                 "threads_left": [], "tampered": [], "started": {}, "compile": {"compiled": 1, "compile_seconds": 0.1}},
}
PAYLOAD = [torch.tensor([1.0, 2.0]).numpy().tobytes()]
OK_HELLO = {"type": "hello", "status": "ok", "versions": {"python": "3.11", "torch": "2.13", "triton": "3.9"},
            "device_name": "cpu", "startup": {"imports_seconds": 1.0, "load_seconds": 0.1}}
OK_BENCH = {"type": "bench_result", "id": "0", "status": "ok", "shape": 0, "mode": "events", "out_bytes": 8,
            "times": [1e-5, 1.1e-5], "host": [2e-5, 2e-5], "overhead": [1e-6], "device_times": [], "sync_gaps": [],
            "checkable": [0, 1], "evidence": {"own_launches": {"k": 2}, "calls_without_own_launch": 0},
            "kernels": [{"name": "k", "own": True, "registers": 32, "spills": 0, "shared_bytes": 0,
                         "num_warps": 4, "num_stages": 2}], "worker_wall": 0.01}
PARSERS = [replies.parse_case_reply, replies.parse_hello, replies.parse_bench_reply, replies.parse_bench_outputs]


def test_a_good_case_reply_becomes_a_record():
    r = replies.parse_case_reply(OK_CASE, PAYLOAD, expect_id=3)
    assert isinstance(r, replies.CaseResult)
    assert r.outputs[0].kernel_wrote and r.outputs[0].tensor.tolist() == [1.0, 2.0]
    assert dict(r.evidence.own_launches) == {"add_kernel": 1} and r.evidence.compiled == 1
    assert r.tensors()[0].dtype == torch.float32


def test_good_hello_and_bench_replies():
    assert replies.parse_hello(OK_HELLO, []).ok
    b = replies.parse_bench_reply(OK_BENCH, [])
    assert b.times == (1e-5, 1.1e-5) and b.kernels[0].registers == 32 and b.checkable == (0, 1)


@pytest.mark.parametrize("broken,why", [
    (dict(OK_CASE, outputs=["not an object"]), "an output must be an object"),
    (dict(OK_CASE, outputs=[dict(OK_CASE["outputs"][0], shape=[3])]), "bytes"),
    (dict(OK_CASE, outputs=[dict(OK_CASE["outputs"][0], dtype="complex64")]), "dtype"),
    (dict(OK_CASE, id=4), "case 3"),
    (dict(OK_CASE, evidence={"own_launches": {"k": -1}}), "integer"),
    (dict(OK_CASE, evidence={"own_launches": ["k"]}), "object"),
    (dict(OK_CASE, evidence={"tampered": "everything"}), "list"),
    (dict(OK_CASE, evidence={"own_launches": {f"k{i}": 1 for i in range(300)}}), "entries"),
    (dict(OK_CASE, status="maybe"), "status"),
    (dict(OK_CASE, type="hello"), "expected a result"),
    (dict(OK_CASE, status="error", error={"category": "anything"}), "category"),
    (dict(OK_CASE, status="error", error={"category": "runtime", "frames": [1, 2]}), "frame"),
])
def test_malformed_case_replies_are_named(broken, why):
    payloads = [] if broken.get("status") == "error" else PAYLOAD
    with pytest.raises(replies.MalformedReply, match=why):
        replies.parse_case_reply(broken, payloads, expect_id=3)


def test_extra_tensor_frames_are_refused():
    with pytest.raises(replies.MalformedReply, match="more tensor frames"):
        replies.parse_case_reply(OK_CASE, PAYLOAD * 2, expect_id=3)


def test_long_strings_are_cut_not_carried():
    r = replies.parse_case_reply(dict(OK_CASE, status="error", error={"category": "runtime", "message": "x" * 10**6}),
                                 [], expect_id=3)
    assert len(r.error.message) == replies.MAX_TEXT


def test_deeply_nested_json_is_a_protocol_error_not_a_crash():
    deep = b'{"type": "hello", "x": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    with tempfile.TemporaryFile() as f:  # a pipe would block on a frame this size with no reader
        wire.write_frame(f.fileno(), deep)
        f.seek(0)
        with pytest.raises(wire.ProtocolError, match="RecursionError"):
            wire.Reader(f.fileno()).recv(0)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=30)
KEYS = ["type", "id", "status", "returned", "outputs", "inputs_modified", "evidence", "error", "versions",
        "device_name", "startup", "mode", "times", "host", "overhead", "checkable", "kernels", "out_bytes",
        "worker_wall", "note", "own_launches", "torch_ops", "tampered", "started", "frames", "category"]


def _parse_or_malformed(parser, message, payloads):
    try:
        result = parser(message, payloads, **({"expect_id": 3} if parser is replies.parse_case_reply else {}))
    except replies.MalformedReply:
        return None
    json.dumps(getattr(result, "__dict__", {}), default=str)  # a record is plain, printable data
    return result


@settings(max_examples=300, deadline=None)
@given(message=st.dictionaries(st.sampled_from(KEYS), JSON, max_size=8),
       payloads=st.lists(st.binary(max_size=16), max_size=3))
def test_fuzz_random_messages(message, payloads):
    for parser in PARSERS:
        _parse_or_malformed(parser, message, payloads)


@settings(max_examples=300, deadline=None)
@given(base=st.sampled_from([OK_CASE, OK_HELLO, OK_BENCH]), path=st.lists(st.sampled_from(KEYS + [0, 1]), min_size=1,
                                                                           max_size=3), value=JSON)
def test_fuzz_valid_replies_broken_in_one_place(base, path, value):
    message = json.loads(json.dumps(base))
    node = message
    for key in path[:-1]:
        nxt = node.get(key) if isinstance(node, dict) else (node[key] if isinstance(node, list)
                                                              and isinstance(key, int) and key < len(node) else None)
        if not isinstance(nxt, (dict, list)):
            break
        node = nxt
    last = path[-1]
    if isinstance(node, dict):
        node[last] = value
    elif isinstance(node, list) and isinstance(last, int) and last < len(node):
        node[last] = value
    for parser in PARSERS:
        _parse_or_malformed(parser, message, PAYLOAD)
