"""Device memory that others took is never a verdict against a file, in every phase, by one path: the worker's
figures (judge.shared.oom), the judge's own view of the device (judge.rules.gpu_full), the phase's IE in the
judge's words, and the retry of every command that judges a file (judge.judging). The CPU cannot run out of
device memory, so these are the decisions, on the replies the worker really sends for PyTorch's real messages
(judge.untrusted.errors.classify, parsed by judge.replies); tests/gpu/calls/15-company.sh (part outside) fills a
real GPU during each phase."""

import pytest
import torch

from judge import rules
from judge.judging import capacity_failure
from judge.replies import parsers, records

# PyTorch's message for a worker inside its cap on a device others filled, and for one over its own cap.
FULL = (
    "CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity of 79.19 GiB of which "
    "404.50 MiB is free. Including non-PyTorch memory, this process has 1.30 GiB memory in use. 12.00 GiB "
    "allowed; Of the allocated memory 1.10 GiB is allocated by PyTorch"
)
OWN = (
    "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which "
    "60.00 GiB is free. Including non-PyTorch memory, this process has 11.50 GiB memory in use. 12.00 GiB "
    "allowed; Of the allocated memory 11.00 GiB is allocated by PyTorch"
)


def _worker_error(message: str) -> records.ErrorInfo:
    """What the judge reads of a worker's out-of-memory error: the worker's classification, parsed on arrival."""
    from judge.untrusted.errors import classify

    return parsers.parse_error(classify(torch.cuda.OutOfMemoryError(message), "/nowhere/submission.py"))


def _speed_request(name: str, trusted: bool, message: str):
    """The speed run's request to a timed worker whose reply is that error: its BenchFailed, or None."""
    from judge.timing.contenders import Contender, request
    from judge.timing.findings import BenchFailed
    from judge.untrusted.errors import classify

    wire = {
        "type": "bench_result",
        "id": "0",
        "status": "error",
        "error": classify(torch.cuda.OutOfMemoryError(message), "/nowhere/submission.py"),
    }

    class Client:
        def send_case(self, msg, payloads):
            pass

        def receive(self, parse, timeout=None, max_bytes=None):
            return parse(wire, [])

    try:
        request(Contender(name, Client(), trusted, 10.0), {"type": "bench", "id": "0"})
    except BenchFailed as exc:
        return exc
    return None


@pytest.mark.parametrize("full", [True, False], ids=["judge-sees-the-device-full", "device-with-room"])
def test_each_phase_says_ie_for_others_memory_and_the_retry_takes_it(full, monkeypatch):
    from judge.judgement import error_text

    monkeypatch.setattr(rules, "gpu_full", lambda: full)
    # A case (and a test worker's load): the group's message.
    err = _worker_error(FULL)
    case = (rules.error_verdict(err.category).value, f"large-rows: {error_text(err)}")
    # The submission's timed worker, and the reference's (trusted: IE whatever it says).
    sub = _speed_request("submission", False, FULL)
    ref = _speed_request("reference", True, FULL)
    timed = (sub.verdict, f"speed run: {sub.message}")
    trusted = (ref.verdict, f"speed run: {ref.message}")
    if full:
        for verdict, message in (case, timed, trusted):
            assert verdict == "IE" and capacity_failure(verdict, message), message
        assert "the GPU was full with other work: this process held 1.30 GiB" in case[1]
    else:
        # The worker's word alone (forgeable) is no capacity claim: its own MLE; the trusted worker's IE is
        # still tried again (its error is no verdict against the file either way).
        assert case[0] == "MLE" and timed[0] == "MLE" and not capacity_failure(*case)
        assert trusted[0] == "IE" and capacity_failure(*trusted)


def test_a_files_own_allocations_over_its_cap_stay_its_mle_in_every_phase(monkeypatch):
    monkeypatch.setattr(rules, "gpu_full", lambda: True)  # even on a full device
    err = _worker_error(OWN)
    assert err.category == "memory" and rules.error_verdict(err.category).value == "MLE"
    sub = _speed_request("submission", False, OWN)
    assert sub.verdict == "MLE" and not capacity_failure(sub.verdict, sub.message)


def test_the_pytorch_baseline_running_out_of_memory_is_dropped_not_a_verdict(monkeypatch):
    from judge.timing.findings import BaselineLost

    monkeypatch.setattr(rules, "gpu_full", lambda: True)
    with pytest.raises(BaselineLost):
        _speed_request("pytorch", True, FULL)
