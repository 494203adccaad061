"""The rulebook's maps (judge.rules), written out by hand from the README's verdict table.

How a worker's end maps to a verdict: out of time TLE, out of memory MLE, too much output OLE, a crash RTE, a forged
or malformed reply RJ. How an exception the worker reported maps: Triton's compile error CE, out of memory MLE
(IE when the judge itself sees the device full: another job's doing), an exception RTE, a rule the worker found
broken RJ, a call its group cannot make WA.
"""

from types import MappingProxyType

import pytest

from judge import rules
from judge.judgement import error_outcome
from judge.replies.records import ErrorInfo, Evidence, Returned
from judge.rules import Context
from judge.verdicts import Verdict


@pytest.mark.parametrize(
    "reason,verdict",
    [
        ("timeout", Verdict.TLE),
        ("memory", Verdict.MLE),
        ("output", Verdict.OLE),
        ("crash", Verdict.RTE),
        ("protocol", Verdict.RJ),
        ("something new", Verdict.RTE),
    ],
)
def test_how_a_workers_end_maps_to_a_verdict(reason, verdict):
    assert rules.death_verdict(reason) is verdict


@pytest.mark.parametrize(
    "category,verdict",
    [
        ("compile", Verdict.CE),
        ("memory", Verdict.MLE),
        ("runtime", Verdict.RTE),
        ("rule", Verdict.RJ),
        ("contract", Verdict.WA),
        ("something new", Verdict.RTE),
    ],
)
def test_how_a_reported_exception_maps_to_a_verdict(category, verdict):
    assert rules.error_verdict(category) is verdict
    assert error_outcome(ErrorInfo(category=category, type="E", message="m")).verdict is verdict


def test_a_full_device_is_the_judges_failure_only_when_the_judge_sees_it_full(monkeypatch):
    # The worker's word alone (a submission can forge it) is MLE; the judge's own view of a full device is IE.
    monkeypatch.setattr(rules, "gpu_full", lambda: False)
    assert rules.error_verdict("capacity") is Verdict.MLE
    monkeypatch.setattr(rules, "gpu_full", lambda: True)
    assert rules.error_verdict("capacity") is Verdict.IE
    assert rules.error_verdict("memory") is Verdict.MLE  # a worker over its own cap is MLE either way


def test_without_cuda_the_judge_never_sees_a_full_device():
    assert rules.gpu_full() is False


def test_the_rules_run_in_the_documented_order():
    assert rules.RULES == (
        "tampering",
        "own_threads",
        "threads_left",
        "tensor_subclass",
        "torch_ops",
        "no_kernel",
        "kernel_wrote",
        "custom_op",
    )
    assert [m.__name__.rsplit(".", 1)[-1] for m in rules.rules()] == list(rules.RULES)


# ---------------------------------------------------------------------- the anti-cheat rules over a call's evidence

CASE = Context(file="mine.py")
WARMUP = Context(file="mine.py", phase="warmup", where="at bench shape n=4096:")
TIMED = Context(file="mine.py", phase="timed", where="at bench shape n=4096:")
LAUNCHED = MappingProxyType({"_add": 1})


def _ev(**kw):
    return Evidence(**{"own_launches": LAUNCHED, **kw})


def test_an_honest_calls_evidence_breaks_no_rule():
    for ctx in (CASE, WARMUP, TIMED):
        assert rules.violation(_ev(), (), ctx) is None
        assert rules.violation(_ev(), (), ctx, stage="provenance") is None


@pytest.mark.parametrize(
    "evidence,ctx,message,details",
    [
        (
            _ev(tampered=("torch.cuda.synchronize", "time.perf_counter")),
            CASE,
            "the call changed what the judge relies on: torch.cuda.synchronize, time.perf_counter",
            {"tampered": ["torch.cuda.synchronize", "time.perf_counter"]},
        ),
        (
            _ev(tampered=("time.perf_counter",)),
            TIMED,
            "while timed, the submission changed what the judge relies on: time.perf_counter",
            {"tampered": ["time.perf_counter"]},
        ),
        (
            _ev(started=MappingProxyType({"thread": 2, "process": 1})),
            CASE,
            "the call started 1 process and 2 threads of its own: all work must be done by your Triton kernels, in this "
            "process and on this thread",
            {"started": {"thread": 2, "process": 1}},
        ),
        (
            _ev(started=MappingProxyType({"thread": 1})),
            TIMED,
            "at bench shape n=4096: the submission started 1 thread of its own while timed",
            {"started": {"thread": 1}},
        ),
        (
            _ev(started=MappingProxyType({"thread": 1})),
            Context(file="mine.py", phase="timed"),
            "the submission started 1 thread of its own while timed",
            {"started": {"thread": 1}},
        ),
        (
            _ev(threads_left=("worker-1", "worker-2")),
            CASE,
            "threads the submission started were still running after it returned (worker-1, worker-2): all work must be "
            "done by then",
            {"threads_left": ["worker-1", "worker-2"]},
        ),
        (
            _ev(torch_ops=MappingProxyType({"mul": 1, "add": 2})),
            CASE,
            "the answer was computed with PyTorch operators (torch add, torch mul); only allocation, views and copies may "
            "run outside your Triton kernels",
            {"torch_ops": {"mul": 1, "add": 2}},
        ),
        (
            _ev(torch_ops=MappingProxyType({"add": 2})),
            TIMED,
            "at bench shape n=4096: the answer was computed with PyTorch operators (torch add) in timed calls",
            {"torch_ops": {"add": 2}},
        ),
        (
            _ev(torch_ops=MappingProxyType({"add": 2})),
            WARMUP,
            "at bench shape n=4096: the answer was computed with PyTorch operators (torch add)",
            {"torch_ops": {"add": 2}},
        ),
        (
            Evidence(),
            CASE,
            "no Triton kernel defined in mine.py was launched",
            {"other_launches": {}, "no_kernel": True},
        ),
        (
            Evidence(other_launches=MappingProxyType({"lib_add": 1, "lib_mul": 1})),
            WARMUP,
            "at bench shape n=4096: no Triton kernel defined in mine.py was launched (it launched only kernels defined "
            "elsewhere: lib_add, lib_mul)",
            {"other_launches": {"lib_add": 1, "lib_mul": 1}, "no_kernel": True},
        ),
        (
            _ev(calls_without_own_launch=3),
            TIMED,
            "at bench shape n=4096: 3 timed call(s) launched no Triton kernel of mine.py",
            {},
        ),
    ],
)
def test_each_rule_says_what_it_found(evidence, ctx, message, details):
    found = rules.violation(evidence, (), ctx)
    assert found is not None and found.verdict is Verdict.RJ
    assert found.message == message and found.details == details


def test_a_timed_call_is_judged_by_its_own_launch_count():
    assert rules.violation(Evidence(), (), TIMED) is None  # each timed call's launches are counted apart


def test_a_tensor_subclass_returned_is_named():
    sub = Returned(kind="tensor", type="Mine", tensor_subclass=True)
    found = rules.violation(_ev(), (Returned(kind="tensor", type="Tensor"), sub), CASE)
    assert found.message == (
        "the result is a torch.Tensor subclass (Mine): results must be plain tensors (a "
        "subclass can compute inside the judge's checks)"
    )


def test_the_first_rule_broken_in_the_rulebooks_order_decides():
    both = _ev(tampered=("time.perf_counter",), torch_ops=MappingProxyType({"add": 1}))
    assert rules.violation(both, (), CASE).message.startswith("the call changed what the judge relies on")
    assert (
        rules.violation(_ev(torch_ops=MappingProxyType({"add": 1})), (), CASE, stage="provenance") is None
    )  # an evidence rule is not a provenance rule


class _Cuda:
    """torch.cuda as the judge's own process sees a GPU: available, initialized, so much free."""

    def __init__(self, free, initialized=True, error=None):
        self.free, self.initialized, self.error = free, initialized, error

    def is_available(self):
        return True

    def is_initialized(self):
        return self.initialized

    def mem_get_info(self):
        if self.error:
            raise self.error
        return self.free, 80 << 30


@pytest.mark.parametrize(
    "cuda,full",
    [
        (_Cuda(free=(2 << 30) - 1), True),  # under 2 GiB free: the judge sees the device full
        (_Cuda(free=2 << 30), False),
        (_Cuda(free=40 << 30), False),
        (_Cuda(free=0, initialized=False), False),  # the judge's own process never used the GPU: it does not know
        (_Cuda(free=0, error=RuntimeError("CUDA error: unknown")), False),  # no view of the device
    ],
)
def test_the_judge_sees_a_full_device_under_two_gib_free(monkeypatch, cuda, full):
    import torch

    for name in ("is_available", "is_initialized", "mem_get_info"):
        monkeypatch.setattr(torch.cuda, name, getattr(cuda, name))
    assert rules.gpu_full() is full


def test_without_a_context_the_file_is_called_the_submission():
    assert rules.violation(Evidence()).message == "no Triton kernel defined in the submission was launched"


def test_a_rule_module_without_a_stage_is_an_evidence_rule(monkeypatch):
    # problems/README.md, "Adding a rule": a module with a check() (and a STAGE); without one it runs with the
    # evidence rules, before the values are looked at.
    plain = type("Rule", (), {"check": staticmethod(lambda evidence, outputs, context: rules.Finding("mine"))})
    monkeypatch.setattr(rules, "_loaded", [plain])
    assert rules.violation(Evidence(), (), CASE).message == "mine"
    assert rules.violation(Evidence(), (), CASE, stage="provenance") is None
