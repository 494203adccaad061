"""A worker's deadline counts its own time, not the time a loaded host kept it from a core (judge.starvation).

Real processes on a real scheduler: a worker stand-in and the host's other work pinned to one core, so that
the stand-in waits on the run queue. What the deadline is told is what Linux says about those processes."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from judge import starvation
from judge.sandbox.base import _descendants

pytestmark = pytest.mark.skipif(
    not os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/schedstat"), reason="no scheduler statistics here"
)

SPIN = "import time\nt = time.time()\nwhile time.time() - t < {s}: pass\n"
# A process that keeps `n` spinning children of its own for `s` seconds, itself asleep.
CROWD = (
    "import subprocess, sys\n"
    "kids = [subprocess.Popen([sys.executable, '-c', {spin!r}]) for _ in range({n})]\n"
    "[k.wait() for k in kids]\n"
)


def _pinned(code: str) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", code])
    os.sched_setaffinity(p.pid, {0})
    return p


@pytest.fixture
def crowded_core():
    """Three processes spinning on core 0 for 8 s: the host's other work."""
    others = [_pinned(SPIN.format(s=8)) for _ in range(3)]
    yield
    for p in others:
        p.kill()
        p.wait()


def _wait_past(deadline: starvation.Deadline, seconds: float) -> float:
    """Ask the deadline as a reader does, once a tenth of a second, for ``seconds``; the last answer."""
    end = time.monotonic() + seconds
    at = deadline()
    while time.monotonic() < end:
        time.sleep(0.1)
        at = deadline()
    return at


def test_a_worker_kept_from_its_core_is_given_the_time_back(crowded_core):
    worker = _pinned(SPIN.format(s=6))
    try:
        deadline = starvation.Deadline(1.0, lambda: {worker.pid})
        at = _wait_past(deadline, 2.5)
        # Four on one core: the worker had about a quarter of 2.5 s, so its deadline moved past the wall limit.
        assert at > deadline.start + 1.5, (at - deadline.start, deadline.waited)
        assert deadline.waited > 1.0
        assert deadline.charged() < 1.0  # (had its time run out now, the host would be blamed: IE)
    finally:
        worker.kill()
        worker.wait()


def test_the_stretch_has_an_end_and_then_the_host_is_blamed(crowded_core):
    worker = _pinned(SPIN.format(s=6))
    try:
        deadline = starvation.Deadline(1.0, lambda: {worker.pid}, stretch=2.0)
        at = _wait_past(deadline, 2.5)
        assert at == pytest.approx(deadline.start + 2.0)  # never past stretch x the limit
        assert deadline.starved()  # its own time is still under the limit: IE, not TLE
    finally:
        worker.kill()
        worker.wait()


def test_a_worker_that_sleeps_is_charged_its_wall_time():
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(6)"])
    try:
        time.sleep(1.0)  # (its start is past: on a busy host that start waited for a core too)
        deadline = starvation.Deadline(0.5, lambda: {worker.pid})
        at = _wait_past(deadline, 1.5)
        assert at == deadline.start + 0.5  # sleeping is the file's own time
        assert not deadline.starved()  # TLE
    finally:
        worker.kill()
        worker.wait()


def test_a_worker_that_crowds_itself_buys_no_time():
    # Its own four spinning processes share one core (the affinity is inherited): each waits about three
    # quarters of the time it is not given, but together they used all the core they were given, and that
    # is the charge, not the wall time less the waits. (Other work on the host, CI's other tests, only
    # shrinks both sides of the comparison alike.)
    worker = _pinned(CROWD.format(spin=SPIN.format(s=6), n=4))
    try:
        time.sleep(1.0)  # (its children started)
        deadline = starvation.Deadline(1.0, lambda: _descendants(worker.pid))
        _wait_past(deadline, 2.0)
        charged = deadline.charged()
        wall_less_waits = time.monotonic() - deadline.start - deadline.waited  # (waits since the first read)
        assert charged > 2 * wall_less_waits, (charged, wall_less_waits)
    finally:
        for pid in _descendants(worker.pid) - {worker.pid}:
            os.kill(pid, 9)
        worker.kill()
        worker.wait()


def test_no_stretch_is_a_plain_deadline(crowded_core):
    worker = _pinned(SPIN.format(s=6))
    try:
        deadline = starvation.Deadline(1.0, lambda: {worker.pid}, stretch=1.0)
        assert _wait_past(deadline, 1.5) == deadline.start + 1.0
        assert not deadline.starved()
    finally:
        worker.kill()
        worker.wait()


# A correct vector add whose first call spends about half a second of processor time in plain Python first.
SLOW_FIRST_CALL = """
import torch
import triton
import triton.language as tl

CALLS = [0]


@triton.jit
def _add(x_ptr, y_ptr, out_ptr, n, sx, sy, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * sx, mask=mask) + tl.load(y_ptr + offs * sy, mask=mask), mask=mask)


def add(x, y):
    CALLS[0] += 1
    if CALLS[0] == 1:
        total = 0
        for i in range(LOOPS):
            total += i
    out = torch.empty(x.numel(), dtype=x.dtype, device=x.device)
    _add[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), x.stride(0), y.stride(0), BLOCK=1024)
    return out
"""


def _loops_for(seconds: float) -> int:
    """How many turns of SLOW_FIRST_CALL's loop take ``seconds`` of processor time here."""
    n = 2_000_000
    t0 = time.process_time()
    total = 0
    for i in range(n):
        total += i
    return int(n * seconds / max(time.process_time() - t0, 1e-3))


# Under -m full, and not the proof of the mechanism (the tests above are): a processor time calibrated in one
# process and spent in another varies with what shares the core's other hyperthread, so the case's real length
# is not held; one CI run with other tests beside it was TLE, and one run here with the stretch set to 1 was AC.
@pytest.mark.corpus
@pytest.mark.full
def test_a_case_slowed_by_the_host_is_not_a_time_limit_exceeded(tmp_path, crowded_core):
    """A case that takes the worker half its limit, on a core three other processes share: about twice its
    limit in wall time. The verdict is about the file: AC, not TLE."""
    path = tmp_path / "slow_first_call.py"
    path.write_text(SLOW_FIRST_CALL.replace("LOOPS", str(_loops_for(0.5))))
    cmd = [sys.executable, "-m", "judge", "submit", "93", str(path), "--sandbox", "process", "--json"]
    cmd += ["--group", "small-ragged", "--max-examples", "2", "--time-limit", "1", "--workers", "1"]
    # The judge and its worker on the crowded core (the affinity is inherited).
    done = subprocess.run(["taskset", "-c", "0", *cmd], capture_output=True, text=True, timeout=300)
    import json

    report = json.loads(done.stdout)
    assert report["verdict"] == "AC", (report["verdict"], report.get("message"), done.stderr[-2000:])


def test_a_quick_reply_reads_no_figures():
    """A reply within BASELINE_AFTER (a case on a GPU takes milliseconds) costs no listing of the worker's
    processes: the deadline asks for them only once a wait has lasted that long."""
    asked = []
    deadline = starvation.Deadline(1.0, lambda: asked.append(1) or set())
    deadline()
    assert asked == []
    time.sleep(starvation.BASELINE_AFTER + 0.05)
    deadline()
    assert asked == [1]
