"""The rulebook's maps (judge.rules), written out by hand from the README's verdict table.

How a worker's end maps to a verdict: out of time TLE, out of memory MLE, too much output OLE, a crash RTE, a forged
or malformed reply RJ. How an exception the worker reported maps: Triton's compile error CE, out of memory MLE
(IE when the judge itself sees the device full: another job's doing), an exception RTE, a rule the worker found
broken RJ, a call its group cannot make WA.
"""

import pytest

from judge import rules
from judge.judgement import error_outcome
from judge.replies import ErrorInfo
from judge.verdicts import Verdict


@pytest.mark.parametrize("reason,verdict", [
    ("timeout", Verdict.TLE), ("memory", Verdict.MLE), ("output", Verdict.OLE), ("crash", Verdict.RTE),
    ("protocol", Verdict.RJ), ("something new", Verdict.RTE)])
def test_how_a_workers_end_maps_to_a_verdict(reason, verdict):
    assert rules.death_verdict(reason) is verdict


@pytest.mark.parametrize("category,verdict", [
    ("compile", Verdict.CE), ("memory", Verdict.MLE), ("runtime", Verdict.RTE), ("rule", Verdict.RJ),
    ("contract", Verdict.WA), ("something new", Verdict.RTE)])
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
    assert rules.RULES == ("tampering", "own_threads", "threads_left", "tensor_subclass", "torch_ops", "no_kernel",
                           "kernel_wrote", "custom_op")
    assert [m.__name__.rsplit(".", 1)[-1] for m in rules.rules()] == list(rules.RULES)
