"""The judge's own answers survive a GPU out of memory that someone else caused (issue 12).

The golden model runs in the trusted process on the judged GPU, which the
worker (and, in a course, other jobs) share. An out-of-memory error there is
not the submission's fault and must not become an internal error: the answers
are computed again on the CPU. Simulated here on the CPU with PyTorch's "meta"
device standing in for the GPU: the golden model raises the GPU's error the
first time it is handed tensors that are not on the CPU.
"""

import pytest
import torch

from judge import expected
from judge.problems import find_problem

P93 = find_problem("93")
X, Y = torch.randn(10), torch.randn(10)


def _fails_once_off_the_cpu(monkeypatch, error) -> list:
    real = P93.golden.golden
    devices = []

    def golden(*args):
        devices.append(args[0].device.type)
        if args[0].device.type != "cpu" and len(devices) == 1:
            raise error
        return real(*args)

    monkeypatch.setattr(P93.golden, "golden", golden)
    return devices


def _accelerator_error(text):
    try:
        return torch.AcceleratorError(text)
    except (AttributeError, TypeError):  # an older torch: a RuntimeError with the same text
        return RuntimeError(text)


@pytest.mark.parametrize(
    "error",
    [
        torch.cuda.OutOfMemoryError(
            "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 139.81 GiB total capacity)"
        ),
        _accelerator_error(
            "CUDA error: out of memory\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions."
        ),
    ],
    ids=["OutOfMemoryError", "AcceleratorError"],
)
def test_an_out_of_memory_on_the_gpu_is_answered_on_the_cpu(monkeypatch, error):
    devices = _fails_once_off_the_cpu(monkeypatch, error)
    got = expected.answers(P93, [X, Y], "float32", "meta")
    assert devices == ["meta", "cpu"]
    assert got.device == "cpu"
    assert torch.equal(got.golden[0], X.double() + Y.double())
    assert got.naive[0].dtype == torch.float32 and got.dtypes == [torch.float32]


def test_other_gpu_errors_are_not_hidden(monkeypatch):
    _fails_once_off_the_cpu(monkeypatch, _accelerator_error("CUDA error: an illegal memory access was encountered"))
    with pytest.raises(RuntimeError, match="illegal memory access"):
        expected.answers(P93, [X, Y], "float32", "meta")


def test_an_out_of_memory_on_the_cpu_is_not_retried(monkeypatch):
    calls = []

    def golden(*args):
        calls.append(args[0].device.type)
        raise MemoryError("out of memory")

    monkeypatch.setattr(P93.golden, "golden", golden)
    with pytest.raises(MemoryError):
        expected.answers(P93, [X, Y], "float32", "cpu")
    assert calls == ["cpu"]


@pytest.mark.parametrize(
    "error",
    [
        torch.cuda.OutOfMemoryError(
            "CUDA out of memory. Tried to allocate 8.00 GiB (GPU 0; 2.00 GiB allowed by the "
            "per-process memory fraction)"
        ),
        _accelerator_error("CUDA error: out of memory"),
    ],
    ids=["OutOfMemoryError", "AcceleratorError"],
)
def test_a_jobs_own_gpu_out_of_memory_is_mle(error):
    """In the worker ([limits] gpu_memory_mb caps PyTorch's allocator there): MLE for that job alone."""
    from judge import rules
    from judge.untrusted.errors import classify

    err = classify(error, "/nowhere/submission.py")
    assert err["category"] == "memory"
    assert rules.error_verdict(err["category"]).value == "MLE"


# PyTorch's messages as the H200 gave them (tests/gpu/logs/2026-12-05/call2: 12 softmax submissions at once).
FULL_TIMED = (
    "CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity of 139.80 GiB of which "
    "504.50 MiB is free. Including non-PyTorch memory, this process has 15.30 GiB memory in use. 32.00 GiB "
    "allowed; Of the allocated memory 14.25 GiB is allocated by PyTorch"
)
FULL_REPLAY = (
    "CUDA out of memory. Tried to allocate 256.00 MiB. GPU 0 has a total capacity of 139.80 GiB of which "
    "228.00 MiB is free. Including non-PyTorch memory, this process has 646.00 MiB memory in use. Of the "
    "allocated memory 128.00 MiB is allocated by PyTorch"
)
OVER_CAP = (
    "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 139.80 GiB of which "
    "100.00 GiB is free. Including non-PyTorch memory, this process has 15.50 GiB memory in use. 16.00 GiB "
    "allowed; Of the allocated memory 15.00 GiB is allocated by PyTorch"
)
OVER_HALF = (
    "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 139.80 GiB of which "
    "1.00 GiB is free. Including non-PyTorch memory, this process has 120.00 GiB memory in use. Of the "
    "allocated memory 119.00 GiB is allocated by PyTorch"
)


@pytest.mark.parametrize(
    "message, category, verdict",
    [
        (FULL_TIMED, "capacity", "IE"),  # within its 32 GiB: the device was full
        (OVER_CAP, "memory", "MLE"),  # 15.5 + 2 GiB over its 16 GiB
        (OVER_HALF, "memory", "MLE"),  # no cap said: it held most of the device itself
    ],
    ids=["device-full", "over-its-cap", "most-of-the-device"],
)
def test_an_out_of_memory_within_the_workers_own_cap_is_the_judges_failure_not_the_files(
    message, category, verdict, monkeypatch
):
    """Several submissions share a GPU in `judge grade`: an allocation can fail because others filled the device
    while the worker was inside its cap. That is IE (judged again by the next run), never MLE against the file,
    when the judge sees the device full itself; on the worker's word alone (forgeable) it stays MLE."""
    from judge import rules
    from judge.untrusted.errors import classify

    err = classify(torch.cuda.OutOfMemoryError(message), "/nowhere/submission.py")
    assert err["category"] == category
    monkeypatch.setattr(rules, "gpu_full", lambda: True)
    assert rules.error_verdict(err["category"]).value == verdict
    monkeypatch.setattr(rules, "gpu_full", lambda: False)
    assert rules.error_verdict(err["category"]).value == "MLE"
    assert err["message"] == message  # the worker's words as PyTorch gave them; the judge explains an IE


def test_a_replay_that_cannot_allocate_on_a_full_gpu_is_ie_not_rj():
    """The replay worker is the judge's own: its out-of-memory error on a device others filled is no finding."""
    from judge.shared.oom import device_full

    assert "held 0.63 GiB" in device_full(FULL_REPLAY)  # no cap said: within half the device
    assert device_full(OVER_HALF) is None and device_full("CUDA error: out of memory") is None


def test_make_inputs_heavy_work_goes_to_the_cpu_after_an_out_of_memory():
    # kit.heavy (98's float64 forward inside make_inputs): on the judge's device, brought back to the CPU;
    # after the GPU's out-of-memory error, on the CPU; any other error is raised. "meta" stands in for the GPU.
    from judge import kit

    seen = []

    def forward(x):
        seen.append(x.device.type)
        if x.device.type == "meta":
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 256 MiB")
        return x * 2, x + 1

    with kit.computing_on("meta"):
        doubled, plus = kit.heavy(forward, X)
    assert seen == ["meta", "cpu"] and torch.equal(doubled, X * 2) and torch.equal(plus, X + 1)
    seen.clear()
    assert torch.equal(kit.heavy(lambda x: forward(x)[0], X), X * 2) and seen == ["cpu"]  # no device: the CPU

    def broken(x):
        raise ValueError("not a memory error")

    with kit.computing_on("meta"), pytest.raises(ValueError):
        kit.heavy(broken, X)


def test_98_make_inputs_is_the_same_wherever_its_forward_runs():
    # The values come from the case's CPU generator; the float64 forward, rounded to the case's dtype, gives
    # the same bits on either device (checked on the GPU by tests/gpu/probes/forward_inputs.py).
    from judge import kit

    p = find_problem("98")
    params = dict(
        b=1, h=2, n=130, d=32, dtype="float16", layout="bnhd", causal=True, sm_scale="default", values="peaky", seed=4
    )
    plain = p.golden.make_inputs(dict(params), kit.generator(4))
    with kit.computing_on("cpu"):
        again = p.golden.make_inputs(dict(params), kit.generator(4))
    pairs = [(a, b) for a, b in zip(plain, again) if isinstance(a, kit.TensorInput)]
    assert len(pairs) == 6 and all(torch.equal(a.values, b.values) and a.strides() == b.strides() for a, b in pairs)


GIB = 1 << 30


@pytest.mark.parametrize(
    "message",
    [
        "CUDA error: out of memory\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
        "CUDA error: CUDA-capable device(s) is/are busy or unavailable",
    ],
    ids=["out-of-memory", "busy-or-unavailable"],
)
def test_a_cuda_error_of_a_full_device_carries_the_figures_the_judge_reads(message):
    """CUDA's own errors (a launch's, a module load's, a context's) say no figures, and were MLE, RTE or RJ
    against accepted files when 16 jobs filled an H100 (tests/gpu/RESULTS.md, 2026-12-06). The process adds
    what it sees: within its cap on a full device, capacity; holding more than its cap, or on a device with
    room, the error stays the file's."""
    from judge.shared import oom
    from judge.shared.oom import device_full, device_view

    full = device_view(message, (100 << 20, 80 * GIB, 600 << 20), 8 * GIB)
    assert full.startswith(message[:40]) and "held 0.59 GiB" in device_full(full)
    assert device_full(device_view(message, (100 << 20, 80 * GIB, 9 * GIB), 8 * GIB)) is None  # over its cap
    assert device_view(message, (10 * GIB, 80 * GIB, 600 << 20), 8 * GIB) == message  # the device had room
    assert device_view(message, None, 8 * GIB) == message  # CUDA never set up in the process: nothing seen
    unseen = device_view(message, oom.UNASKED, 8 * GIB)  # no room to ask: the judge's own view decides alone
    assert unseen.startswith(message[:40]) and "CUDA context" in device_full(unseen)
    assert device_full(message) is None  # CUDA's error alone, with nothing added: the file's


def test_a_worker_says_capacity_for_a_cuda_error_only_where_it_saw_the_device_full(monkeypatch):
    from judge import rules
    from judge.shared import oom
    from judge.untrusted.errors import classify

    error = _accelerator_error("CUDA error: out of memory")
    monkeypatch.setattr(oom, "_figures", lambda: (100 << 20, 80 * GIB, 600 << 20))
    err = classify(error, "/nowhere/submission.py")
    assert err["category"] == "capacity" and err["message"].startswith("CUDA error: out of memory [")
    monkeypatch.setattr(rules, "gpu_full", lambda: True)
    assert rules.error_verdict(err["category"]).value == "IE"
    monkeypatch.setattr(rules, "gpu_full", lambda: False)  # the worker's word alone: the file's MLE
    assert rules.error_verdict(err["category"]).value == "MLE"
    monkeypatch.setattr(oom, "_figures", lambda: (40 * GIB, 80 * GIB, 600 << 20))
    assert classify(error, "/nowhere/submission.py")["category"] == "memory"
    busy = _accelerator_error("CUDA error: CUDA-capable device(s) is/are busy or unavailable")
    assert classify(busy, "/nowhere/submission.py")["category"] == "runtime"  # room on the device: RTE stands
