"""The interpreter's replay worker starts at the lowest CPU priority and gets the normal one back when the
judge first needs it (judge.sandbox.base.yields_cores, judge.replay.Replayer._ensure): on 2 cores its torch
import then takes only what the judge and the case worker leave idle. The real worker, the real kernel
scheduler's autogroups."""

import tempfile
import time
from pathlib import Path

import pytest

from judge.problems import find_problem
from judge.sandbox import Job, Limits, get_backend
from judge.sandbox import base

LIMITS = Limits(case_seconds=120, run_seconds=300, memory_mb=4096, output_bytes=1 << 20, processes=64)


def _job(device="cpu", interpret=True, module=base.REPLAY_MODULE) -> Job:
    return Job(submission=find_problem("93").reference_path, scratch=Path(tempfile.gettempdir()), device=device,
               interpret=interpret, limits=LIMITS, module=module)


def test_only_the_interpreters_replay_worker_under_process_or_bwrap_on_an_idle_host_yields(monkeypatch):
    monkeypatch.setattr(base, "_idle_cores", lambda: True)
    monkeypatch.delenv("JUDGE_REPLAY_YIELD", raising=False)
    assert base.yields_cores(_job(), "process") and base.yields_cores(_job(), "bwrap")
    assert not base.yields_cores(_job(), "docker")  # the judge could not give it back by pid
    assert not base.yields_cores(_job(module="judge.untrusted"), "process")  # the case worker
    assert not base.yields_cores(_job(device="cuda", interpret=False), "process")  # its compiles are waited for
    monkeypatch.setenv("JUDGE_REPLAY_YIELD", "0")
    assert not base.yields_cores(_job(), "process")
    monkeypatch.delenv("JUDGE_REPLAY_YIELD")
    monkeypatch.setattr(base, "_idle_cores", lambda: False)  # a busy host: there it would only wait
    assert not base.yields_cores(_job(), "process")
    # Whoever may have yielded gets the normal priority back, whatever the host's load at its spawn was.
    assert base.may_yield_cores(_job()) and not base.may_yield_cores(_job(module="judge.untrusted"))


def _autogroups(root: int) -> dict[int, str]:
    """pid -> its autogroup line, for the replay worker's python process(es) under ``root``."""
    out = {}
    for pid in base._descendants(root):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
            if b"judge.untrusted.replay" in cmd and b"bwrap" not in cmd:
                out[pid] = Path(f"/proc/{pid}/autogroup").read_text().strip()
        except OSError:
            pass
    return out


@pytest.mark.parametrize("name", ["process", "bwrap"])
def test_the_replay_worker_starts_low_and_is_given_the_normal_priority_when_needed(name, monkeypatch):
    from judge.replay import Replayer

    if not Path("/proc/self/autogroup").exists() or Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip() != "1":
        pytest.skip("the kernel's autogroups are off here: the replay worker does not yield")
    backend = get_backend(name)
    why = backend.unavailable("cpu")
    if why:
        pytest.skip(why)
    monkeypatch.setattr(base, "_idle_cores", lambda: True)  # (the test suite's other workers load the host)
    monkeypatch.delenv("JUDGE_REPLAY_YIELD", raising=False)
    monkeypatch.delenv("JUDGE_POOL_SOCKET", raising=False)
    own = Path("/proc/self/autogroup").read_text()
    replayer = Replayer(find_problem("93"), _job(), backend, threads=1, golden_device="cpu")
    try:
        replayer.prestart()
        root = replayer.channel.proc.pid
        deadline = time.monotonic() + 60
        seen = {}
        while time.monotonic() < deadline and not any(v.endswith("nice 19") for v in seen.values()):
            seen = _autogroups(root)
            time.sleep(0.02)
        assert seen and all(v.endswith("nice 19") for v in seen.values()), f"it did not start low: {seen}"
        replayer.wait_ready()  # the judge needs it now
        assert replayer.ready
        now = _autogroups(root)
        assert now and all(v.endswith("nice 0") for v in now.values()), f"its priority was not given back: {now}"
    finally:
        replayer.close()
    assert Path("/proc/self/autogroup").read_text() == own  # the judge's own priority is never touched
