"""The lanes (judge.lanes): a worker with nothing left in the group being judged takes the next group's cases,
but never past a failure, and never for a group the judge will not reach (issue 13, 98's group ends)."""

import threading
import time

import pytest

from judge.lanes import LaneOutcome, Lanes, Plan

WAIT = 10.0


class Script:
    """A fake worker pool: which cases ran, on which lane, and what they return; a case can be held."""

    def __init__(self, fails=(), held=()):
        self.ran: list[tuple[int, int]] = []  # (plan index, case index), in the order they started
        self.fails = set(fails)
        self.held = {key: threading.Event() for key in held}
        self.started = {key: threading.Event() for key in held}
        self.lock = threading.Lock()
        self.counted = 0

    def run(self, plan, i, ex):
        with self.lock:
            self.ran.append((plan.index, i))
        key = (plan.index, i)
        if key in self.held:
            self.started[key].set()
            assert self.held[key].wait(WAIT)
        return LaneOutcome(passed=key not in self.fails, freezes=False, counted=True)

    def count(self):
        with self.lock:
            self.counted += 1


def _until(predicate):
    end = time.monotonic() + WAIT
    while not predicate():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.005)


def _lanes(script, n=2):
    return Lanes(list(range(n)), script.run, lambda ex: True, script.count)


def test_an_idle_lane_takes_the_next_groups_cases_while_a_slow_case_runs():
    script = Script(held=[(0, 0)])
    lanes = _lanes(script)
    lanes.add(Plan(0, "g0", [{}, {}]))
    lanes.begin(0)
    lanes.add(Plan(1, "g1", [{}, {}, {}]))
    try:
        assert script.started[(0, 0)].wait(WAIT)
        # The other lane ran case 1 of group 0 and then all of group 1, while case 0 is still held.
        _until(lambda: sorted(script.ran) == [(0, 0), (0, 1), (1, 0), (1, 1), (1, 2)])
        assert lanes.ran_ahead == 3
        # Group 1's cases were counted for the progress only when its turn came; group 0's one done case was.
        assert script.counted == 1
    finally:
        script.held[(0, 0)].set()
    lanes.wait(0)
    assert script.counted == 2
    lanes.begin(1)
    assert script.counted == 5
    lanes.wait(1)
    lanes.close()


def test_no_lane_goes_past_a_failure():
    """Case 1 of group 0 fails: group 0's later cases are not handed out (Hypothesis shrinks from there), and
    group 1 waits for its turn, which may never come (a failure can stop the later groups)."""
    script = Script(fails=[(0, 1)])
    lanes = _lanes(script, n=1)
    lanes.add(Plan(0, "g0", [{}, {}, {}, {}]))
    lanes.add(Plan(1, "g1", [{}, {}]))
    lanes.begin(0)
    lanes.wait(0)
    time.sleep(0.2)
    assert script.ran == [(0, 0), (0, 1)]
    lanes.close()
    assert script.ran == [(0, 0), (0, 1)] and lanes.ran_ahead == 0


def test_a_lane_waits_for_a_failure_still_running_before_it_goes_ahead():
    """Group 0's last case is running when the lanes run out of group 0: they go ahead (nothing has failed
    yet), and once it comes back failed they take no more of group 1."""
    script = Script(fails=[(0, 1)], held=[(0, 1), (1, 0)])
    lanes = _lanes(script)
    lanes.add(Plan(0, "g0", [{}, {}]))
    lanes.add(Plan(1, "g1", [{}, {}, {}]))
    lanes.begin(0)
    assert script.started[(0, 1)].wait(WAIT)
    assert script.started[(1, 0)].wait(WAIT)  # ahead, on the lane that ran case 0
    script.held[(0, 1)].set()
    lanes.wait(0)
    script.held[(1, 0)].set()
    time.sleep(0.2)
    assert sorted(script.ran) == [(0, 0), (0, 1), (1, 0)]
    lanes.begin(1)  # the failure was a WA: group 1 is judged, and its cases are handed out again
    lanes.wait(1)
    lanes.close()
    assert sorted(script.ran) == [(0, 0), (0, 1), (1, 0), (1, 1), (1, 2)]


def test_a_frozen_group_hands_out_nothing_more():
    script = Script()
    plan = Plan(0, "g0", [{}, {}, {}])

    def run(p, i, ex):
        script.ran.append((p.index, i))
        return LaneOutcome(passed=False, freezes=True, counted=True)

    lanes = Lanes([0], run, lambda ex: True, script.count)
    lanes.add(plan)
    lanes.add(Plan(1, "g1", [{}]))
    lanes.begin(0)
    lanes.wait(0)
    lanes.close()
    assert script.ran == [(0, 0)] and plan.frozen


def test_a_worker_that_could_not_start_has_no_lane():
    script = Script()
    lanes = Lanes(
        ["up", "down"],
        lambda p, i, ex: (script.ran.append(ex), script.run(p, i, ex))[1],
        lambda ex: ex == "up",
        script.count,
    )
    lanes.add(Plan(0, "g0", [{}] * 4))
    lanes.begin(0)
    lanes.wait(0)
    lanes.close()
    assert [x for x in script.ran if isinstance(x, str)] == ["up"] * 4


def test_the_judges_own_error_in_a_lane_is_raised_where_it_waits():
    def run(plan, i, ex):
        raise RuntimeError("a bug of ours")

    lanes = Lanes([0, 1], run, lambda ex: True, lambda: None)
    lanes.add(Plan(0, "g0", [{}, {}, {}]))
    lanes.begin(0)
    with pytest.raises(RuntimeError, match="a bug of ours"):
        lanes.wait(0)
    lanes.close()


def test_the_last_groups_first_case_goes_first_on_a_lane_but_the_first_workers():
    # Every problem's last group is its largest inputs, and its first case is refilled on the same worker:
    # the tests' longest chain, which ran when every other lane was done (softmax's reference on the H200:
    # 11 lanes idle for 2-3 s while the twelfth ran it). Taken early, it runs beside the first group.
    script = Script(held=[(0, 0), (2, 0)])
    lanes = _lanes(script, n=2)
    lanes.add(Plan(0, "g0", [{}, {}, {}]))
    lanes.add(Plan(1, "g1", [{}]))
    lanes.add(Plan(2, "g2", [{}, {}]))
    lanes.early(2)
    lanes.begin(0)
    assert script.started[(0, 0)].wait(WAIT) and script.started[(2, 0)].wait(WAIT)
    # Lane 0 (the first worker's) took group 0's first case; lane 1 the early one, not group 0's next.
    assert sorted(script.ran) == [(0, 0), (2, 0)] and lanes.ran_ahead == 1
    script.held[(2, 0)].set()
    _until(lambda: (0, 2) in script.ran)
    script.held[(0, 0)].set()
    for i in range(3):
        lanes.begin(i)
        lanes.wait(i)
    lanes.close()
    assert sorted(script.ran) == [(0, 0), (0, 1), (0, 2), (1, 0), (2, 0), (2, 1)]  # each once
    assert script.counted == 6


def test_the_early_case_is_not_taken_after_a_failure_nor_on_the_first_worker_alone():
    # A failure before it may stop the later groups: the early case is then not run.
    script = Script(fails=[(0, 0)])
    lanes = _lanes(script, n=1)  # one lane: the first worker's, which never takes it
    lanes.add(Plan(0, "g0", [{}, {}]))
    lanes.add(Plan(1, "g1", [{}]))
    lanes.early(1)
    lanes.begin(0)
    lanes.wait(0)
    time.sleep(0.2)
    lanes.close()
    assert script.ran == [(0, 0)] and lanes.ran_ahead == 0
    script = Script(fails=[(0, 0)], held=[(0, 0)])
    lanes = _lanes(script, n=2)
    lanes.add(Plan(0, "g0", [{}]))
    lanes.begin(0)
    assert script.started[(0, 0)].wait(WAIT)
    script.held[(0, 0)].set()
    lanes.wait(0)  # failed: group 1's first case is not to be run ahead now
    lanes.add(Plan(1, "g1", [{}]))
    lanes.early(1)
    time.sleep(0.2)
    lanes.close()
    assert script.ran == [(0, 0)] and lanes.ran_ahead == 0
