"""The host-wide GPU admission (judge.gpu_admission), for real on the CPU: the ledger and its flocks are
host-side, so real processes contend for a GPU whose capacity the test gives; a process killed with SIGKILL
while it holds a reservation frees it."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from judge.gpu_admission import GIB, Admission, Refused, waiting_words

ROOT = Path(__file__).resolve().parents[1]

# A judge in miniature: reserves WANT GiB (LEAST GiB at least) on a 10 GiB GPU whose ledger is in DIR, says
# when it waits and when it got its memory, holds it until its stdin closes (or HOLD seconds), and releases.
CLIENT = textwrap.dedent("""
    import os, sys, time
    from judge.gpu_admission import GIB, Admission
    d, want, least, hold, timed = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
    if len(sys.argv) > 6:  # another user's judge: drop to that uid once the modules are in
        os.umask(0o022)
        os.setgid(int(sys.argv[6]))
        os.setuid(int(sys.argv[6]))
    adm = Admission(0, capacity=10 * GIB, margin=0, directory=d)
    print("asking", flush=True)
    r = adm.reserve(int(want * GIB), least=int(least * GIB), unit=GIB, timed=int(timed * GIB), what="client",
                    on_wait=lambda ahead, why: print("waiting", ahead, why, flush=True))
    print("got", r.bytes // GIB, time.monotonic(), flush=True)
    if hold < 0:
        sys.stdin.read()
    else:
        time.sleep(hold)
    r.release()
    print("released", time.monotonic(), flush=True)
""")


def _client(d, want, least=None, hold=-1.0, timed=0.0, uid=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen(
        [sys.executable, "-c", CLIENT, str(d), str(want), str(want if least is None else least), str(hold), str(timed)]
        + ([] if uid is None else [str(uid)]),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )


def _line(proc, starts: str, timeout: float = 30.0) -> str:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(f"the client ended before saying {starts!r}")
        if line.startswith(starts):
            return line.strip()
    raise AssertionError(f"no {starts!r} in {timeout} s")


def _wait_until(pred, timeout=20.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return False


def _adm(tmp_path, **kw):
    return Admission(0, capacity=kw.pop("capacity", 10 * GIB), margin=kw.pop("margin", 0), directory=tmp_path, **kw)


def test_reservations_count_against_the_device_and_the_largest_timed_extra(tmp_path):
    adm = _adm(tmp_path)
    a = adm.reserve(4 * GIB, timed=3 * GIB)
    assert adm.free(adm.snapshot()) == 10 * GIB - 4 * GIB - 3 * GIB
    # A second speed run's extra shares the region (only the GPU lock's holder uses it): the larger counts.
    b = adm.reserve(1 * GIB, timed=2 * GIB)
    assert adm.free(adm.snapshot()) == 10 * GIB - 5 * GIB - 3 * GIB
    # Sized to what is free: 4 workers of 1 GiB asked, 2 fit.
    c = adm.reserve(4 * GIB, least=1 * GIB, unit=GIB)
    assert c.bytes == 2 * GIB
    assert adm.reserve(1 * GIB, block=False) is None  # full: no admission at once
    for r in (a, b, c):
        r.release()
    assert adm.snapshot() == []


def test_memory_used_outside_the_ledger_is_not_handed_out(tmp_path):
    used = {"n": 0}
    adm = _adm(tmp_path, used=lambda: used["n"])
    a = adm.reserve(2 * GIB)
    used["n"] = 2 * GIB + 5 * GIB  # the judge's own (within its reservation), and 5 GiB another program took
    assert adm.free(adm.snapshot()) == 3 * GIB
    assert adm.reserve(4 * GIB, block=False) is None
    # While a speed run holds the GPU's lock its extra is in use: that is not another program's memory.
    a.release()
    used["n"] = 0  # (the other program ended)
    t = adm.reserve(1 * GIB, timed=4 * GIB)
    t.set_timing(True)
    used["n"] = 1 * GIB + 4 * GIB
    assert adm.free(adm.snapshot()) == 10 * GIB - 1 * GIB - 4 * GIB
    t.release()


def test_a_request_bigger_than_the_device_is_refused_at_once(tmp_path):
    adm = _adm(tmp_path, margin=1 * GIB)
    t0 = time.monotonic()
    with pytest.raises(Refused, match="can give at most 9.0 GiB"):
        adm.reserve(8 * GIB, timed=2 * GIB)
    assert time.monotonic() - t0 < 5 and adm.snapshot() == []  # not waited on, and nothing left behind


def test_a_killed_judge_frees_its_reservation_and_the_others_proceed(tmp_path):
    holder = _client(tmp_path, 8)
    waiter = None
    try:
        _line(holder, "got")
        waiter = _client(tmp_path, 6)
        assert _line(waiter, "waiting").startswith("waiting 0")  # first in line, no room
        os.kill(holder.pid, signal.SIGKILL)  # no release, no cleanup: only the kernel's end of its flock
        holder.wait(timeout=10)
        assert _line(waiter, "got").startswith("got 6")
        # The dead judge's file counted as nothing, and the next decision removed it.
        assert [e.pid for e in _adm(tmp_path).snapshot()] == [waiter.pid]
    finally:
        for p in (holder, waiter):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to start a judge as another user")
def test_judges_of_two_users_share_one_ledger():
    """A lab box: one user's judge made the ledger (with a usual umask, 022); another user's judge waits its
    turn behind it, then is admitted, instead of failing to open the ledger's lock."""
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="judge-admission-users-"))  # (pytest's tmp_path is root's alone)
    base.chmod(0o755)
    d = base / "gpu0.admission"
    old = os.umask(0o022)
    other = None
    try:
        mine = _adm(d).reserve(8 * GIB, least=8 * GIB, unit=GIB, what="root's judge")
        other = _client(d, 6, uid=65534)
        assert _line(other, "waiting").startswith("waiting 0")
        mine.release()
        assert _line(other, "got").startswith("got 6")
    finally:
        os.umask(old)
        if other is not None and other.poll() is None:
            other.kill()
            other.wait()
        shutil.rmtree(base, ignore_errors=True)


def test_first_come_first_admitted_a_big_request_is_not_passed_by_small_ones(tmp_path):
    procs = []
    try:
        holder = _client(tmp_path, 7)
        procs.append(holder)
        _line(holder, "got")
        big = _client(tmp_path, 8, hold=0.5)  # cannot fit until the holder ends
        procs.append(big)
        _line(big, "waiting")
        small = _client(tmp_path, 1, hold=0.1)  # would fit now, but comes after the big one
        procs.append(small)
        assert _line(small, "waiting") == f"waiting 1 {''}".strip()  # one judge ahead of it
        time.sleep(1.0)
        assert _adm(tmp_path).free(_adm(tmp_path).snapshot()) == 3 * GIB  # room it was not given
        holder.stdin.close()
        t_big = float(_line(big, "got").split()[2])
        t_small = float(_line(small, "got").split()[2])
        assert t_big < t_small
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()


def test_an_admitted_judge_growing_goes_before_new_requests(tmp_path):
    adm = _adm(tmp_path)
    mine = adm.reserve(3 * GIB)
    other = _client(tmp_path, 6)
    newcomer = None
    try:
        _line(other, "got")
        newcomer = _client(tmp_path, 6)  # waits: 3 + 6 held of 10
        _line(newcomer, "waiting")
        assert not mine.resize(5 * GIB, block=False)  # 1 GiB free: no growth at once
        other.stdin.close()
        # Growing goes first: with the newcomer admitted first (6 + 3) it could never grow to 5.
        assert mine.resize(5 * GIB) and mine.bytes == 5 * GIB
        time.sleep(0.5)
        assert [(e.pid, e.held) for e in adm.snapshot()] == [(os.getpid(), True), (newcomer.pid, False)]
        assert mine.resize(1 * GIB) and mine.bytes == 1 * GIB  # shrinking: at once, and the newcomer fits
        assert _line(newcomer, "got").startswith("got 6")
    finally:
        mine.release()
        for p in (other, newcomer):
            if p is not None:
                p.kill()
                p.wait()


def test_the_waiting_words(tmp_path):
    assert waiting_words(3, "") == "waiting for the GPU: 3 judges ahead"
    assert waiting_words(1, "") == "waiting for the GPU: 1 judge ahead"
    assert waiting_words(0, "6.0 GiB needed, 2.0 GiB free") == "waiting for the GPU: 6.0 GiB needed, 2.0 GiB free"


def test_a_capacity_retry_waits_for_room_given_back(tmp_path):
    adm = _adm(tmp_path)
    other = _client(tmp_path, 2, hold=1.0)
    try:
        _line(other, "got")
        t0 = time.monotonic()
        assert adm.wait_for_change(10.0)
        assert 0.5 < time.monotonic() - t0 < 5.0
        assert not adm.wait_for_change(0.5)  # nothing held, nothing given back
    finally:
        other.kill()
        other.wait()


def test_a_capacity_retry_also_waits_for_another_program_to_let_go(tmp_path):
    used = {"n": 30 * GIB}
    adm = _adm(tmp_path, capacity=80 * GIB, used=lambda: used["n"])
    import threading

    threading.Timer(0.6, lambda: used.update(n=2 * GIB)).start()
    t0 = time.monotonic()
    assert adm.wait_for_change(10.0)
    assert 0.5 < time.monotonic() - t0 < 5.0
