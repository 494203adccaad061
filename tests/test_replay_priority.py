"""The interpreter's replay worker imports torch and Triton at the lowest CPU priority on an idle host and
takes the normal one back once its imports are done, or after a bound (judge.sandbox.base.yields_cores,
judge.untrusted.replay._yield_cores): on 2 cores its import then takes only what the judge and the case
worker leave idle. The real worker, the real kernel scheduler's autogroups."""

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from judge.problems import find_problem
from judge.sandbox import Job, Limits, backend_class, base, get_backend

ROOT = Path(__file__).resolve().parents[1]
LIMITS = Limits(case_seconds=120, run_seconds=300, memory_mb=4096, output_bytes=1 << 20, processes=64)


def _job(device="cpu", interpret=True, module=base.REPLAY_MODULE) -> Job:
    return Job(
        submission=find_problem("93").reference_path,
        scratch=Path(tempfile.gettempdir()),
        device=device,
        interpret=interpret,
        limits=LIMITS,
        module=module,
    )


def _inherited() -> str:
    """The autogroup nice a worker started from here serves at: the nice it inherits (judge.shared.niceness)."""
    import os

    return str(max(0, os.getpriority(os.PRIO_PROCESS, 0)))


def _autogroups_on():
    path = Path("/proc/sys/kernel/sched_autogroup_enabled")
    if not Path("/proc/self/autogroup").exists() or not path.exists() or path.read_text().strip() != "1":
        pytest.skip("the kernel's autogroups are off here: the replay worker does not yield")


def test_only_the_interpreters_replay_worker_under_process_or_bwrap_on_an_idle_host_yields(monkeypatch):
    monkeypatch.setattr(base, "_idle_cores", lambda: True)
    process, bwrap, docker = (backend_class(name)() for name in ("process", "bwrap", "docker"))
    assert base.yields_cores(_job(), process) and base.yields_cores(_job(), bwrap)
    assert not base.yields_cores(_job(), docker)
    assert not base.yields_cores(_job(module="judge.untrusted"), process)  # the case worker
    assert not base.yields_cores(_job(device="cuda", interpret=False), process)  # its compiles are waited for
    monkeypatch.setattr(base, "_idle_cores", lambda: False)  # a busy host: there it would only wait
    assert not base.yields_cores(_job(), process)


BOUND = """
import sys, time
sys.path.insert(0, sys.argv[1])
from judge.untrusted.replay import _yield_cores
def nice():
    return open("/proc/self/autogroup").read().split()[-1]
back = _yield_cores(0.3)
assert back is not None, "could not lower"
seen = [nice()]
time.sleep(1.0)   # the bound passes while this process is still "importing"
seen.append(nice())
back()            # imports done: already back, nothing changes
seen.append(nice())
print(" ".join(seen))
"""


def test_the_low_priority_has_a_bound_even_when_the_imports_take_longer():
    _autogroups_on()
    # A session of its own (as every worker has): its autogroup is its own, not this test runner's.
    proc = subprocess.run(
        [sys.executable, "-c", BOUND, str(ROOT)], capture_output=True, text=True, timeout=60, start_new_session=True
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["19", _inherited(), _inherited()]


def _replay_python(root: int) -> dict[int, str]:
    """pid -> its autogroup line, for the replay worker's python process under ``root``."""
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
def test_the_replay_worker_imports_low_and_serves_at_its_inherited_priority(name, monkeypatch):
    from judge.replay import Replayer

    _autogroups_on()
    backend = get_backend(name)
    why = backend.unavailable("cpu")
    if why:
        pytest.skip(why)
    monkeypatch.setattr(base, "_idle_cores", lambda: True)  # (the test suite's other workers load the host)
    monkeypatch.setattr(base, "YIELD_SECONDS", 60.0)  # only the end of its imports gives it back here
    replayer = Replayer(find_problem("93"), _job(), backend, threads=1, golden_device="cpu")
    try:
        replayer.prestart()
        root = replayer.channel.proc.pid
        deadline = time.monotonic() + 60
        seen = {}
        while time.monotonic() < deadline and not any(v.endswith("nice 19") for v in seen.values()):
            seen = _replay_python(root)
            time.sleep(0.02)
        assert seen and all(v.endswith("nice 19") for v in seen.values()), f"it did not import low: {seen}"
        replayer.wait_ready()
        assert replayer.ready
        now = _replay_python(root)
        assert now and all(v.endswith(f"nice {_inherited()}") for v in now.values()), f"it serves low: {now}"
    finally:
        replayer.close()


RATE_LIMITED = """
import sys
sys.path.insert(0, sys.argv[1])
from judge.untrusted.replay import _yield_cores
back = _yield_cores(60.0)
assert back is not None, "could not lower"
back()  # at once: within the kernel's 100 ms between two writes of an unprivileged process
print(open("/proc/self/autogroup").read().split()[-1])
"""


def test_giving_the_priority_back_outlasts_the_kernels_rate_limit():
    # Without privilege the kernel takes one autogroup write in 100 ms on the whole machine (EAGAIN else):
    # the give-back right after the lowering must be tried again, not dropped.
    import os

    _autogroups_on()
    python, drop = sys.executable, None
    if os.geteuid() == 0:  # as a student's own user would be: the system's python (root's may be unreadable)
        python = "/usr/bin/python3"
        if not os.access(python, os.X_OK):
            pytest.skip("no /usr/bin/python3 to run as an unprivileged user")

        def drop():
            os.setgid(65534)
            os.setgroups([])
            os.setuid(65534)

    proc = subprocess.run(
        [python, "-c", RATE_LIMITED, str(ROOT)],
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,
        preexec_fn=drop,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == [_inherited()]


def test_a_closed_replayer_starts_no_worker_again(monkeypatch):
    # A replay that was waiting when its judging run ended (a speed run's check ahead, its run discarded) must
    # not start a replay worker for a run that is over: nobody would close it.
    from judge.channel import WorkerStartFailed
    from judge.replay import Replayer
    from judge.sandbox.process import ProcessBackend

    replayer = Replayer(find_problem("93"), _job(), ProcessBackend(), threads=1, golden_device="cpu")
    replayer.prestart()
    proc = replayer.channel.proc
    replayer.close()
    assert proc.popen.poll() is not None and replayer.channel is None
    with pytest.raises(WorkerStartFailed, match="closed"):
        replayer._ensure()  # (a replay turns it into IE, judge.replay.Replayer._replay)
    assert replayer.channel is None
