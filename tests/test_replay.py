"""The replay check (judge.replay), piece by piece.

* judge.shared.kernel_source: which of a file's definitions the replay compiles
  (read with ast; the file is never imported);
* judge.untrusted.trace: what the worker records of a call, in a fresh
  interpreter process (the watch patches Triton);
* judge.untrusted.replay: the record replayed alone, on fresh inputs, by the
  replay worker through the judge's own channel;
* judge.replay_input: checking a record (validate), following outside memory;
* judge.replay_verdict: turning a replay's result into a verdict.

End to end (a whole judging run, the corpus's exploits that only the replay
catches) is tests/test_anticheat_runtime.py and the corpus itself.
"""

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from types import MappingProxyType

import pytest
import torch

from judge.replay_input import encode, outside_source, validate
from judge.replies import parsers, records
from judge.replies.trace import _trace_value, parse_trace
from judge.shared import kernel_source, tracing

ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- kernel_source


def test_kernels_constants_and_triton_imports_are_kept_and_nothing_else():
    src = textwrap.dedent("""
        import math
        import torch
        import triton as tt
        import triton.language as tl
        from triton import jit as J
        try:
            from triton.language.extra.cuda import libdevice
        except ImportError:
            from triton.language.extra import libdevice

        LOG2E = 1.4426950408889634
        RCP = tl.constexpr(1 / math.log(2))
        TABLE = [1, 2, 3]             # mutable: not a constant
        SIZE = len(TABLE)             # computed from something else: unbound
        HOST = torch.float16          # from torch: unbound

        def helper(x):                # a plain function: unbound
            return x

        @tt.autotune(configs=[tt.Config({"B": 16})], key=["n"])
        @tt.jit
        def tuned(x, n, B: tl.constexpr):
            pass

        @J(do_not_specialize=["n"])
        def aliased(x, n):
            pass

        @tt.heuristics({"B": lambda a: 16})
        def not_a_kernel(x):
            pass

        def entry(x):
            global LOG2E
            LOG2E = 2.0
    """)
    ex = kernel_source.extract(src)
    assert ex.kernels == ["tuned", "aliased"]
    codes = {s.name: s for s in ex.steps if isinstance(s, kernel_source.Code)}
    assert set(codes) == {"LOG2E", "RCP", "tuned", "aliased"}
    assert [kernel_source._dotted(d.func if hasattr(d, "func") else d) for d in codes["tuned"].node.decorator_list] == [
        "tt.jit"
    ]
    # LOG2E is declared global in a function (it may change while the file runs): defined, then removed.
    assert {"TABLE", "SIZE", "HOST", "helper", "not_a_kernel", "entry", "torch", "LOG2E"} <= ex.unbound
    assert not {"RCP", "tuned", "aliased", "tl", "tt", "J", "math", "libdevice"} & ex.unbound
    assert any(isinstance(s, kernel_source.TryBinds) for s in ex.steps)


def test_a_kernel_redefined_as_something_else_is_not_a_kernel():
    src = "import triton\n@triton.jit\ndef k(x):\n    pass\nk = 3\n"
    assert kernel_source.kernel_names(src) == []
    assert kernel_source.kernel_names("def broken(:\n") == []


# --------------------------------------------------------------------------- validate (pure)


def _ref(storage, n=4, offset=0, dtype="float32"):
    return records.TensorRef(storage, offset, (n,), (1,), dtype)


def _trace(events, storages=None, outputs=None, truncated=""):
    storages = storages or (
        records.TraceStorage(0, 16, "cpu", "input", arg=0),
        records.TraceStorage(1, 16, "cpu", "made", event=0),
    )
    return records.Trace(tuple(storages), tuple(events), tuple(outputs or (_ref(1),)), truncated)


ALLOC = records.TraceEvent("op", op="empty.memory_format", args=(records.Tagged("list", (4,)),), made=(1,))


def _launch(*args, kernel="k"):
    return records.TraceEvent("launch", kernel=kernel, grid=(1,), args=args, kwargs=MappingProxyType({"BLOCK": 4}))


def _validate(trace, sizes=None):
    return validate(trace, {"k"}, sizes or {0: 16}, "cpu", "sub.py")


def test_a_consistent_record_validates():
    assert _validate(_trace([ALLOC, _launch(_ref(0), _ref(1), 4)])) is None


@pytest.mark.parametrize(
    "trace,sizes,verdict,text",
    [
        (_trace([ALLOC, _launch(_ref(0), _ref(1), kernel="other")]), None, "RJ", "not a top-level @triton.jit"),
        (_trace([ALLOC, _launch(_ref(0, n=5), _ref(1))]), None, "RJ", "beyond its memory"),
        (_trace([ALLOC, _launch(_ref(0, offset=1), _ref(1))]), None, "RJ", "beyond its memory"),
        (_trace([ALLOC, _launch(_ref(7), _ref(1))]), None, "RJ", "never describes"),
        (_trace([_launch(_ref(0), _ref(1)), ALLOC]), None, "RJ", "not consistent"),
        (_trace([ALLOC, _launch(_ref(0), _ref(1))]), {0: 32}, "RJ", "not the case's"),
        (_trace([ALLOC, _launch(_ref(0), _ref(1))]), {0: 16, 1: 16}, "RJ", "lacks some"),
        (_trace([ALLOC, records.TraceEvent("foreign", kernel="x (lib.py)")]), None, "RJ", "not defined in sub.py"),
        (
            _trace([ALLOC, _launch(_ref(0), records.Tagged("opaque", "builtins.function"))]),
            None,
            "RJ",
            "a Triton kernel takes",
        ),
        (
            _trace(
                [ALLOC, _launch(_ref(0), records.Tagged("opaque", "triton.tools.tensor_descriptor.TensorDescriptor"))]
            ),
            None,
            "note",
            "replay not possible",
        ),
        (_trace([], truncated="the call made more than 4096 launches and copies"), None, "note", "4096"),
        (
            _trace(
                [ALLOC, _launch(_ref(2), _ref(1))],
                storages=(
                    records.TraceStorage(0, 16, "cpu", "input", arg=0),
                    records.TraceStorage(1, 16, "cpu", "made", event=0),
                    records.TraceStorage(2, 16, "cpu", "outside", snapshot=None),
                ),
            ),
            None,
            "RJ",
            "data from outside your kernels",
        ),
    ],
)
def test_records_that_do_not_add_up(trace, sizes, verdict, text):
    found = _validate(trace, sizes)
    assert found is not None and found[0] == verdict and text in found[1], found


def test_outside_memory_is_followed_to_the_output():
    storages = (
        records.TraceStorage(0, 16, "cpu", "input", arg=0),
        records.TraceStorage(1, 16, "cpu", "made", event=0),
        records.TraceStorage(2, 16, "cpu", "outside", snapshot=b"\0" * 16),
        records.TraceStorage(3, 16, "cpu", "made", event=2),
    )
    copy = records.TraceEvent("op", op="copy_.default", args=(_ref(1), _ref(2)))
    other = records.TraceEvent("op", op="empty.memory_format", args=(records.Tagged("list", (4,)),), made=(3,))
    trace = _trace([ALLOC, copy, other, _launch(_ref(1), _ref(3))], storages=storages)
    assert outside_source(trace, 1) == (True, 1)  # through the copy_
    assert outside_source(trace, 3) == (True, 1)  # the launch was given both
    assert outside_source(trace, 0) == (False, None)
    assert outside_source(trace, 2) == (True, None)


def test_the_record_crosses_back_unchanged():
    trace = _trace(
        [
            ALLOC,
            _launch(
                _ref(0),
                _ref(1),
                records.Tagged("tuple", (1, 2.5, None)),
                records.Tagged("constexpr", records.Tagged("tl_dtype", "fp16")),
            ),
        ]
    )
    record, _ = encode(trace)
    again = parse_trace(json.loads(json.dumps(record)), [])
    assert again.events == trace.events and again.outputs == trace.outputs


# --------------------------------------------------------------------------- record and replay (subprocesses)

SUBMISSION = textwrap.dedent("""
    import math
    import struct
    import torch
    import triton
    import triton.language as tl

    LOG2E = tl.constexpr(1.4426950408889634)  # a plain float global would not compile (Triton wants constexpr)
    HALF = tl.constexpr(0.5)

    @triton.jit
    def _twice(v):
        return v * 2.0

    @triton.autotune(configs=[triton.Config({"BLOCK": 32}, num_warps=2), triton.Config({"BLOCK": 64})], key=["n"])
    @triton.jit
    def scale_kernel(x, out, n, pair, BLOCK: tl.constexpr, OUT: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        v = tl.load(x + offs, mask=m).to(tl.float32)
        w = _twice(v) * HALF * LOG2E / LOG2E + pair[0] - pair[1]
        tl.store(out + offs, w.to(OUT), mask=m)

    @triton.heuristics({"BLOCK": lambda a: triton.next_power_of_2(a["n"])})
    @triton.jit
    def add_kernel(a, b, out, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out + offs, tl.load(a + offs, mask=m) + tl.load(b + offs, mask=m), mask=m)

    def entry(x):
        # x (as given), scaled by a kernel into a float32 buffer, cast, concatenated with zeros,
        # added to a copy of itself by a second kernel.
        n = x.numel()
        buf = torch.empty(n, dtype=torch.float32, device=x.device)
        scale_kernel[lambda m: (triton.cdiv(n, m["BLOCK"]),)](x, buf, n, (1.0, 1.0), OUT=tl.float32)
        half = buf.to(torch.float16).to(torch.float32)
        both = torch.cat([half, torch.zeros(3, device=x.device)])
        twin = torch.empty_like(both)
        twin.copy_(both)
        out = torch.empty_like(both)
        add_kernel[(1,)](both, twin, out, both.numel())
        return out

    def with_outside(x):
        n = x.numel()
        staged = torch.frombuffer(bytearray(struct.pack(f"<{n}f", *([1.0] * n))), dtype=torch.float32)
        out = torch.empty(n, device=x.device)
        add_kernel[(1,)](x, staged, out, n)
        return out

    from triton.tools.tensor_descriptor import TensorDescriptor

    @triton.jit
    def desc_kernel(desc, out, BLOCK: tl.constexpr):
        tl.store(out + tl.arange(0, BLOCK), desc.load([0]) * 2)

    def with_descriptor(x):
        base = torch.empty(16, device=x.device)
        base.copy_(x)
        out = torch.empty(16, device=x.device)
        desc_kernel[(1,)](TensorDescriptor(base, [16], [1], [16]), out, BLOCK=16)
        return out

    def many(x):
        for _ in range(12):
            out = torch.empty_like(x)
        return out
""")

RECORD = textwrap.dedent("""
    import json, os, sys
    os.environ["TRITON_INTERPRET"] = "1"
    sys.path.insert(0, sys.argv[2])
    import torch, torch.utils.deterministic, importlib.util
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True
    from judge.shared import tracing
    from judge.untrusted import guard
    guard.install(sys.argv[1], interpret=True)
    spec = importlib.util.spec_from_file_location("submission", sys.argv[1])
    sub = importlib.util.module_from_spec(spec); spec.loader.exec_module(sub)
    out = {}
    for name in ("entry", "with_outside", "with_descriptor", "many"):
        if name == "many":
            tracing.MAX_EVENTS = 5
        storage = torch.randn(20)
        x = storage[4:]
        with guard.watching(inputs=[(0, storage)], device="cpu") as w:
            r = getattr(sub, name)(x)
        record, frames = w.trace.finish(r)
        out[name] = {"record": record, "frames": [f[1].hex() for f in frames], "ops": dict(w.ops)}
    print(json.dumps(out))
""")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    path = tmp_path_factory.mktemp("replay") / "sub.py"
    path.write_text(SUBMISSION)
    proc = subprocess.run(
        [sys.executable, "-c", RECORD, str(path), str(ROOT)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return path, json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_recorder_sees_launches_options_and_copies(recorded):
    _, out = recorded
    rec = out["entry"]["record"]
    assert out["entry"]["ops"] == {} and rec["truncated"] == ""
    kinds = [e.get("op", e.get("kernel")) for e in rec["events"]]
    assert kinds[0] == "empty.memory_format" and "scale_kernel" in kinds and kinds[-1] == "add_kernel"
    launch = next(e for e in rec["events"] if e.get("kernel") == "scale_kernel")
    # The autotuner's choice (first config in the interpreter) and the grid it resolved from it.
    assert launch["kwargs"]["BLOCK"] == 32 and launch["kwargs"]["num_warps"] == 2 and launch["grid"] == [1]
    # Floats by their 64 bits (a NaN's payload too: JSON keeps none).
    one = {"float": tracing.float_bits(1.0)}
    assert launch["kwargs"]["OUT"] == {"tl_dtype": "fp32"} and launch["args"][3] == {"tuple": [one, one]}
    assert launch["args"][0] == {"ref": [0, 4, [16], [1], "float32"]}
    heur = rec["events"][-1]
    assert heur["kwargs"]["BLOCK"] == 32  # the heuristic's value
    assert {"cat", "copy_", "_to_copy"} <= {e["op"].split(".")[0] for e in rec["events"] if e["k"] == "op"}
    origins = [s["origin"] for s in rec["storages"]]
    assert origins[0] == "input" and "outside" not in origins


def test_memory_from_outside_the_call_travels_with_its_bytes(recorded):
    _, out = recorded
    rec = out["with_outside"]
    outside = [s for s in rec["record"]["storages"] if s["origin"] == "outside"]
    assert len(outside) == 1 and outside[0]["snapshot"] is True and len(rec["frames"]) == 1
    assert bytes.fromhex(rec["frames"][0]) == torch.ones(16).numpy().tobytes()


def test_a_record_over_its_bounds_says_so_and_holds_nothing(recorded):
    _, out = recorded
    rec = out["many"]["record"]
    assert "more than 5" in rec["truncated"] and rec["events"] == []


def _replay(path, record, frames):
    """Replay through the real replay worker (process backend), as judge.replay does."""
    from judge.channel import WorkerChannel
    from judge.sandbox import Job, Limits
    from judge.sandbox.process import ProcessBackend

    limits = Limits(case_seconds=120, run_seconds=300, memory_mb=4096, output_bytes=1 << 20, processes=64)
    with tempfile.TemporaryDirectory() as scratch:
        job = Job(
            submission=path,
            scratch=Path(scratch),
            device="cpu",
            interpret=True,
            limits=limits,
            module="judge.untrusted.replay",
        )
        ch = WorkerChannel(ProcessBackend(), job)
        try:
            ch.start(submission_entry="", arity=0, threads=1)
            ch.send_case({"type": "replay", "id": 1, "trace": record}, frames)
            return ch.receive(parsers.parse_replay_reply, timeout=120, max_bytes=1 << 24, expect_id=1)
        finally:
            ch.close()


def _frames(parsed, fresh_input):
    frames = []
    for s in parsed.storages:
        if s.origin == "input":
            raw = fresh_input.numpy().tobytes()
            frames.append(({"dtype": "uint8", "shape": [len(raw)]}, raw))
        elif s.origin == "outside":
            frames.append(({"dtype": "uint8", "shape": [len(s.snapshot)]}, s.snapshot))
    return frames


def test_the_replay_worker_recomputes_the_call_on_fresh_inputs(recorded):
    path, out = recorded
    parsed = parse_trace(out["entry"]["record"], [])
    assert validate(parsed, set(kernel_source.kernel_names(path.read_text())), {0: 80}, "cpu", "sub.py") is None
    fresh = torch.randn(20, generator=torch.Generator().manual_seed(7))
    result = _replay(path, encode(parsed)[0], _frames(parsed, fresh))
    assert result.ok, result.error
    x = fresh[4:]
    # The kernel's float32 chain adds and takes away 1.0, so a value can land on the other side of an fp16
    # rounding boundary than x.half() would: allow one fp16 step, far below the gap to the recorded inputs.
    want = torch.cat([x.half().float(), torch.zeros(3)]) * 2
    assert torch.allclose(result.outputs[0].tensor, want, rtol=2**-10, atol=2**-14)
    assert result.writers[0] == len(parsed.events) - 1  # the last launch wrote it


def test_the_replay_uses_outside_bytes_as_recorded(recorded):
    path, out = recorded
    rec = out["with_outside"]
    parsed = parse_trace(rec["record"], [bytes.fromhex(f) for f in rec["frames"]])
    fresh = torch.randn(20)
    result = _replay(path, encode(parsed)[0], _frames(parsed, fresh))
    assert result.ok and torch.allclose(result.outputs[0].tensor, fresh[4:] + 1)


def test_a_tensor_descriptor_is_recorded_and_rebuilt(recorded):
    path, out = recorded
    rec = out["with_descriptor"]["record"]
    launch = rec["events"][-1]
    assert launch["args"][0]["tensor_descriptor"]["block_shape"] == [16]
    parsed = parse_trace(rec, [])
    assert validate(parsed, set(kernel_source.kernel_names(path.read_text())), {0: 80}, "cpu", "sub.py") is None
    fresh = torch.randn(20)
    result = _replay(path, encode(parsed)[0], _frames(parsed, fresh))
    assert result.ok and torch.allclose(result.outputs[0].tensor, fresh[4:] * 2)


def test_a_kernel_that_reaches_past_triton_fails_in_the_replay(tmp_path, recorded):
    # The same record, replayed against a file whose kernel needs a plain Python helper: in the interpreter
    # the GPU compiler's front end refuses it before it runs (it would raise NameError in the replay).
    _, out = recorded
    path = tmp_path / "sub.py"
    path.write_text(SUBMISSION.replace("return v * 2.0", "return helper(v)") + "\ndef helper(v):\n    return v * 2.0\n")
    parsed = parse_trace(out["entry"]["record"], [])
    result = _replay(path, encode(parsed)[0], _frames(parsed, torch.randn(20)))
    assert not result.ok and result.kind == "compile" and result.error.type == "CompilationError"
    assert "helper" in result.error.message


def test_a_forged_reference_is_refused_by_the_replay_worker_too(recorded):
    path, out = recorded
    parsed = parse_trace(out["entry"]["record"], [])
    record = encode(parsed)[0]
    record["events"][-1]["args"][0] = {"ref": [0, 0, [1000], [1], "float32"]}  # beyond the input's 80 bytes
    result = _replay(path, record, _frames(parsed, torch.randn(20)))
    assert not result.ok and result.kind == "record" and "beyond" in result.error.message


def test_the_compile_pass_stands_in_for_tensors_with_their_dtype_and_alignment(recorded):
    # What Triton specializes a pointer on is its dtype and its 16-byte alignment: the compile pass ahead of a
    # replay (judge.untrusted.record_replay.CompilePass) gives each tensor reference a stand-in with both, the
    # offset's bytes on an aligned base, as the replay's fresh allocations are. (Its compiles need a GPU: the
    # device calls count what the replays still compiled after it, replay_compiled_in_run.)
    from judge.untrusted.kernel_namespace import load_kernels
    from judge.untrusted.record_replay import CompilePass, ReplayError

    path, out = recorded
    record = encode(parse_trace(out["entry"]["record"], []))[0]
    cp = CompilePass({}, [], "cpu", str(path))
    for entry in record["storages"]:
        cp.sizes[entry["id"]] = entry["nbytes"]
    launch = [e for e in record["events"] if e["k"] == "launch"][-1]
    refs = [a["ref"] for a in launch["args"] if isinstance(a, dict) and "ref" in a]
    stand_ins = [cp.value({"ref": r}) for r in refs]
    assert refs
    for ref, t in zip(refs, stand_ins):
        assert t.dtype == getattr(torch, ref[4]) and t.data_ptr() == ref[1] * tracing.itemsize(ref[4])
    # A view 3 elements into its storage: 12 bytes past an aligned base, so not specialized as 16-aligned.
    assert cp.value({"ref": [refs[0][0], 3, [2], [1], "float32"]}).data_ptr() == 12
    assert cp.value({"ref": [refs[0][0], 2, [2], [1], "float16"]}).dtype == torch.float16
    with pytest.raises(ReplayError):
        cp.value({"ref": [999, 0, [1], [1], "float32"]})  # memory the record never describes
    # A launch it cannot compile here (no GPU driver on this machine) is left to the replay proper: no raise.
    ns, kernels, _ = load_kernels(str(path), False)
    found = CompilePass(ns, kernels, "cpu", str(path)).compile_all({"trace": record})
    assert found["status"] == "ok" and found["compiled"] in (0, -1)


# --------------------------------------------------------------------------- from a replay's result to a verdict


def _judge(result, trace=None):
    from judge import replay_verdict
    from judge.problems import find_problem

    problem = find_problem("93")
    trace = trace or _trace([ALLOC, _launch(_ref(0), _ref(1), 4)])
    reply = records.CaseResult(1, "torch.Tensor", (), (), records.Evidence(), trace)
    x = torch.tensor([1.0, 2.0, 3.0, 4.0])
    answers = __import__("judge.expected", fromlist=["answers"]).answers(problem, [x, x], "float32", "cpu")
    return replay_verdict.outcome(problem, trace, reply, result, answers, "cpu")


def _returned(values):
    t = torch.tensor(values, dtype=torch.float32)
    return records.Returned("tensor", dtype="float32", shape=tuple(t.shape), device="cpu", tensor=t)


def test_a_replay_that_computes_the_answer_passes():
    assert _judge(records.ReplayResult(1, True, (_returned([2.0, 4.0, 6.0, 8.0]),), (1,))) is None


def test_a_replay_that_misses_names_the_output_and_the_launch():
    out = _judge(records.ReplayResult(1, True, (_returned([1.0, 2.0, 3.0, 4.0]),), (1,)))
    assert out.verdict.value == "RJ"
    assert out.message.startswith(
        "replayed alone on fresh inputs, the recorded launches did not compute out: out: 4 of 4"
    )
    assert out.message.endswith("(last written by launch 1 of 1, k grid (1,))")
    # Written last by the allocation, with a launch given it after: both are named.
    out = _judge(records.ReplayResult(1, True, (_returned([1.0, 2.0, 3.0, 4.0]),), (0,)))
    assert (
        "launch 1 of 1, k grid (1,) was the last launch given it; last written by empty before any launch"
        in out.message
    )


def test_a_replay_whose_kernel_failed_is_rejected_with_the_error():
    err = records.ErrorInfo("runtime", "NameError", "name 'helper' is not defined", line=12, code="helper(v)")
    out = _judge(records.ReplayResult(1, False, event=1, kind="run", error=err))
    assert out.verdict.value == "RJ" and "launch 1 of 1, k grid (1,) failed: NameError" in out.message
    assert "line 12" in out.message and "Triton, math" in out.details["hint"]
    out = _judge(records.ReplayResult(1, False, event=0, kind="record", error=records.ErrorInfo("runtime", "X", "no")))
    assert out.verdict.value == "RJ" and "could not be replayed (empty before any launch)" in out.message


def test_a_replay_that_could_not_allocate_on_a_gpu_others_filled_is_ie_not_rj(monkeypatch):
    # The H200's message (tests/gpu/logs/2026-12-05/call2, student008): the replay worker held 646 MiB of 139.8 GiB.
    # IE only where the judge sees the device full itself (judge.rules.gpu_full); the message alone is forgeable.
    from judge import rules

    monkeypatch.setattr(rules, "gpu_full", lambda: True)
    full = (
        "CUDA out of memory. Tried to allocate 256.00 MiB. GPU 0 has a total capacity of 139.80 GiB of which "
        "228.00 MiB is free. Including non-PyTorch memory, this process has 646.00 MiB memory in use."
    )
    for kind in ("record", "run"):
        out = _judge(
            records.ReplayResult(
                1, False, event=-1, kind=kind, error=records.ErrorInfo("runtime", "OutOfMemoryError", full)
            )
        )
        assert out.verdict.value == "IE" and "the GPU was full with other work" in out.message, kind
    # A replay that asks for most of the device itself stays a finding against the file.
    own = full.replace("646.00 MiB memory in use", "120.00 GiB memory in use")
    out = _judge(
        records.ReplayResult(
            1, False, event=-1, kind="record", error=records.ErrorInfo("runtime", "OutOfMemoryError", own)
        )
    )
    assert out.verdict.value == "RJ"
    monkeypatch.setattr(rules, "gpu_full", lambda: False)  # a device with room: the message is not believed
    out = _judge(
        records.ReplayResult(
            1, False, event=-1, kind="record", error=records.ErrorInfo("runtime", "OutOfMemoryError", full)
        )
    )
    assert out.verdict.value == "RJ"


# --------------------------------------------------------------------------- replays settled after later groups


def test_the_fresh_inputs_are_the_same_for_the_same_run_seed_and_secret_without_one():
    """A fixed seed judges the same way twice, replays included (a kernel wrong on some values only was found
    by the replay's values in one run of several: 96 wrong_answer/stats_in_input_dtype.py, 2026-12-05); the
    fresh values still differ from the case's, and from another run seed's."""
    from judge.kit import generator
    from judge.problems import find_problem
    from judge.replay_input import fresh_inputs

    problem = find_problem("96")
    params = {"m": 3, "n": 50, "dtype": "float32", "layout": "contiguous", "values": "normal", "eps": 1e-6, "seed": 7}
    assert set(params) == set(problem.groups[0].domain(True)) | {"seed"}  # (a case of 96's small-ragged)
    original = problem.golden.make_inputs(dict(params), generator(params["seed"]))

    def values(run_seed):
        drawn = fresh_inputs(problem, params, original, run_seed)
        assert drawn is not None
        return drawn[0]["seed"], drawn[1][0].values

    (s1, a), (s2, b), (s3, c) = values(11), values(11), values(12)
    assert s1 == s2 and torch.equal(a, b)
    assert s1 != s3 and not torch.equal(a, c)
    assert not torch.equal(a, original[0].values)
    assert values(None)[0] != values(None)[0]  # no run seed: the OS's randomness, each time


def test_two_replay_workers_replay_two_cases_at_once_and_their_time_is_summed(monkeypatch):
    """A lone submit on a GPU replays on two workers (98's groups waited 7-9 s at their end for one); each
    replay takes a free one, and the report's replay figures are the two workers' together."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from judge.options import replay_workers
    from judge.replayers import Replayers

    both_in = threading.Barrier(2, timeout=10)

    class Member:
        def __init__(self):
            self.timing = {"replays": 0, "replay_seconds": 0.0}

        def check(self, params, inputs, reply, device, shared=None, time_left=None):
            both_in.wait()  # passes only when the other member is replaying at the same time
            self.timing["replays"] += 1
            self.timing["replay_seconds"] += 1.5
            return None

    replayers = Replayers([Member(), Member()])
    with ThreadPoolExecutor(2) as pool:
        assert list(pool.map(lambda i: replayers.check({}, [], None, "cuda"), range(2))) == [None, None]
    assert replayers.timing == {"replays": 2, "replay_seconds": 3.0}

    from judge.settings import settings

    monkeypatch.delenv("JUDGE_REPLAY_WORKERS", raising=False)
    settings.cache_clear()  # (the settings are read once: read them again)
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    assert replay_workers("cuda", False, lone=True) == 3
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert replay_workers("cuda", False, lone=True) == 2
    assert replay_workers("cuda", False, lone=False) == 1 and replay_workers("cpu", True, lone=True) == 1
    monkeypatch.setenv("JUDGE_REPLAY_WORKERS", "3")
    settings.cache_clear()
    assert replay_workers("cuda", False, lone=False) == 3


def test_scalars_are_recorded_exactly_and_strings_whole_or_not_at_all():
    """A NaN's payload and a long string once told the worker from its replay (issue 40: JSON kept no payload, and
    strings were cut at 300 characters): floats travel by their bits, strings whole up to a bound, else refused."""
    import struct

    from judge.untrusted.record_replay import Replay
    from judge.untrusted.trace import Recorder

    rec = Recorder([], "cpu")
    payload = struct.unpack("<d", struct.pack("<Q", 0x7FFC000000000123))[0]
    for value in (payload, -0.0, float("inf"), 1e-310, 0.1):
        recorded = json.loads(json.dumps(rec.value(value)))  # as it crosses the pipe
        parsed = _trace_value(recorded, "test")
        back = Replay({}, [], "cpu", "x.py").value({"float": parsed.value})
        assert struct.pack("<d", back) == struct.pack("<d", value), (value, recorded)
    whole = "s" * tracing.MAX_STRING
    assert rec.value(whole) == whole and _trace_value(whole, "test") == whole
    long = rec.value("s" * (tracing.MAX_STRING + 1))
    assert long == {
        "opaque": f"string of {tracing.MAX_STRING + 1} characters (at most {tracing.MAX_STRING} are recorded)"
    }
    trace = records.Trace(
        storages=(),
        events=(records.TraceEvent("launch", kernel="k", grid=(1,), args=(_trace_value(long, "t"),)),),
        outputs=(),
    )
    found = validate(trace, {"k"}, {}, "cpu", "f.py")
    assert found[0] == "RJ" and "string of 4097 characters" in found[1], found
