"""A judging's claim on its GPU (judge.gpu_claim) against a real ledger (judge.gpu_admission) whose capacity the
test gives: its workers sized to what is free, its speed run's workers ahead only where they fit, the move to
the speed run never waiting, and a judging the device can never hold refused as IE by the session itself."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from judge import gpu_budget
from judge.gpu_admission import GIB, Admission
from judge.gpu_claim import GpuClaim, Refused, hand_over
from judge.options import Options, limits_for
from judge.problems import find_problem

ROOT = Path(__file__).resolve().parents[1]
GPU = Options(device="cuda", interpret=False, gpu=0)


class Stages:
    def __init__(self):
        self.seen = []

    def stage(self, text):
        self.seen.append(text)


def _claim(tmp_path, capacity_gib, *, speed=True, replays=1, progress=None):
    limits = limits_for(find_problem("94"), GPU)
    adm = Admission(0, capacity=int(capacity_gib * GIB), margin=0, directory=tmp_path)
    return GpuClaim(GPU, limits, speed=speed, speed_replays=replays, progress=progress, admission=adm), adm


def test_the_figures_are_the_caps_the_sandbox_enforces():
    limits = limits_for(find_problem("94"), GPU)
    per = gpu_budget.process_bytes(limits)
    assert per == limits.gpu_memory_mb * (1 << 20) + gpu_budget.PROCESS_BYTES
    # The timed workers' PyTorch cap (judge.timing.contenders: the submission's and the trusted ones alike).
    assert gpu_budget.timed_cap_mb(limits) << 20 == (limits.gpu_memory_mb << 20) + gpu_budget.TIMED_EXTRA_BYTES
    assert gpu_budget.speed_bytes(limits, replays=1, baseline=False) == (3 * per, 2 * gpu_budget.TIMED_EXTRA_BYTES)
    assert gpu_budget.speed_bytes(limits, replays=3, baseline=True) == (6 * per, 3 * gpu_budget.TIMED_EXTRA_BYTES)


def test_workers_are_sized_to_what_is_free_and_the_speed_run_never_waits_to_follow(tmp_path):
    claim, adm = _claim(tmp_path, 80)
    per, judge = claim.process, claim.judge
    assert per == judge == 2816 << 20 and claim.speed == (judge + 3 * per, 2 * gpu_budget.TIMED_EXTRA_BYTES)
    # A lone judge: all twelve workers, whose memory also covers its own speed run (no region of its own).
    assert claim.start(12, replays=3) == 12
    assert claim.reservation.bytes == judge + 15 * per == 44 * GIB and claim.reservation.timed == 0
    # A second judge asks for its share of the host (12 // 2) and gets what fits beside the first and beside its
    # own speed run's timed region: 80 - 44 - (judge + 3 workers + 20 GiB - what it holds) leaves 2 workers.
    other = GpuClaim(GPU, claim.limits, speed=True, speed_replays=1, admission=adm)
    assert other.start(12, replays=1) == 2
    assert other.reservation.bytes == judge + 3 * per and other.reservation.timed == 20 * GIB
    # Its speed run's workers do not fit beside its tests now: they start after them.
    assert not other.speed_ahead() and other.reservation.bytes == judge + 3 * per

    class Run:
        reservation = None

    run = Run()
    other.to_speed(run)  # (would wait if it did not fit: it fits by construction)
    assert run.reservation is other.reservation and other.reservation.waited_seconds < 0.5
    assert (other.reservation.bytes, other.reservation.timed) == other.speed
    assert adm.free(adm.snapshot()) == 80 * GIB - 44 * GIB - other.speed[0] - other.speed[1]
    claim.release()
    other.release()
    assert adm.snapshot() == []


def test_a_speed_run_ahead_that_was_dropped_gives_its_workers_memory_back(tmp_path):
    claim, adm = _claim(tmp_path, 60)
    claim.start(2, replays=1)
    held = claim.reservation.bytes
    assert claim.speed_ahead() and claim.reservation.bytes == held + claim.speed[0] - claim.judge
    claim.drop_ahead()
    assert claim.reservation.bytes == held and not claim.ahead
    claim.release()


def test_a_judge_that_must_wait_says_so_in_its_progress(tmp_path):
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
        import sys
        from judge.gpu_admission import GIB, Admission
        r = Admission(0, capacity=40 * GIB, margin=0, directory={str(tmp_path)!r}).reserve(35 * GIB)
        print("held", flush=True)
        sys.stdin.read()
        """),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={"PYTHONPATH": str(ROOT)},
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        stages = Stages()
        claim, _ = _claim(tmp_path, 40, speed=False, progress=stages)
        import threading

        got = {}
        t = threading.Thread(target=lambda: got.setdefault("n", claim.start(4, replays=1)))
        t.start()
        for _ in range(300):
            if stages.seen:
                break
            t.join(0.1)
        holder.stdin.close()
        t.join(30)
        assert got["n"] == 2  # (its share beside one other judge: 4 // 2)
        assert stages.seen[0].startswith("waiting for the GPU: ") and "GiB needed" in stages.seen[0]
        assert claim.waited_seconds > 0
        claim.release()
    finally:
        holder.kill()
        holder.wait()


def test_a_judging_the_gpu_can_never_hold_is_ie_at_once_from_the_session(tmp_path):
    """The session's own path: a claim handed to it (as judge.pool's head start does) on a ledger of a 4 GiB
    device: refused before anything starts, an IE that says why (and which no capacity retry repeats)."""
    from judge.judging import capacity_failure
    from judge.session import Session

    problem = find_problem("94")
    claim, adm = _claim(tmp_path, 4)
    with pytest.raises(Refused):
        claim.start(1, replays=1)
    hand_over(claim)
    report = Session(problem, problem.reference_path, GPU).run()
    assert report.verdict.value == "IE" and report.message.startswith("the GPU cannot hold this judging: ")
    assert "can give at most 4.0 GiB" in report.message and not capacity_failure(report.verdict, report.message)
    assert adm.snapshot() == []
