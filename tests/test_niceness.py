"""A worker weighs on the CPU what the process that started it weighs (judge.shared.niceness).

Each worker runs in a session of its own: with the kernel's autogroups a session competes as one task at its
group's nice, and a cgroup of the cpu controller as one task of its weight, whatever nice its processes carry.
So a job started at nice 10 by the grading service, whose workers would weigh as much as the service, held up
the service's status calls. Here a real `judge submit`, started at an unusual nice, is watched from outside:
each of its workers' sessions must carry that nice, or its cgroup that nice's weight.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from judge.sandbox import get_backend
from judge.shared import niceness

ROOT = Path(__file__).resolve().parent.parent
NICE = 7  # not the service's JOB_NICENESS: no other judge in a parallel test runs at it
# At NICE: start a real worker through the backend named on the command line (the handshake done, it has set
# its session's nice), print its processes' ids, and end it when stdin closes.
STARTER = textwrap.dedent("""
    import os, sys
    from pathlib import Path
    os.nice(int(sys.argv[2]) - os.nice(0))
    from judge.channel import WorkerChannel
    from judge.sandbox import get_backend
    from judge.sandbox.base import Job, Limits
    scratch = Path(sys.argv[3])
    (scratch / "s.py").write_text("def add(x, y):\\n    return x + y\\n")
    limits = Limits(case_seconds=60, run_seconds=120, memory_mb=4096, output_bytes=1 << 20, processes=64,
                    startup_seconds=300)
    channel = WorkerChannel(get_backend(sys.argv[1]), Job(submission=scratch / "s.py", scratch=scratch,
                                                          device="cpu", interpret=True, limits=limits))
    assert channel.start(submission_entry="add", arity=2, threads=1).ok
    print(*channel.proc.pids(), flush=True)
    sys.stdin.read()
    channel.request_exit()
    channel.close()
""")


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _read(entry / "stat")
            if stat:
                kids.setdefault(int(stat.rpartition(")")[2].split()[1]), []).append(int(entry.name))
    return kids


def _descendants(pid: int) -> list[int]:
    kids, found, todo = _children(), [], [pid]
    while todo:
        for child in kids.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _weighing(pid: int) -> tuple[str, int] | None:
    """How the scheduler weighs ``pid``'s session: ("cgroup", its cpu weight as a v1 share) where the process
    is in a cpu cgroup other than the root, else ("autogroup", its autogroup's nice)."""
    cgroups = _read(Path(f"/proc/{pid}/cgroup"))
    if cgroups is None:
        return None
    for line in cgroups.splitlines():
        _, controllers, path = line.split(":", 2)
        if "cpu" in controllers.split(",") and path != "/":
            shares = _read(Path("/sys/fs/cgroup/cpu") / path.lstrip("/") / "cpu.shares")
            return ("cgroup", int(shares)) if shares else None
        if controllers == "" and path != "/" and not Path("/sys/fs/cgroup/cpu").is_dir():
            weight = _read(Path("/sys/fs/cgroup") / path.lstrip("/") / "cpu.weight")
            return ("cgroup", round(int(weight) * 1024 / 100)) if weight else None
    group = _read(Path(f"/proc/{pid}/autogroup"))
    return ("autogroup", int(group.split()[-1])) if group else None


@pytest.mark.parametrize("sandbox", ["process", "bwrap", "docker"])
def test_a_niced_judges_worker_weighs_what_it_weighs(sandbox, tmp_path):
    why = get_backend(sandbox).unavailable()
    if why is not None:
        pytest.skip(f"sandbox {sandbox} unavailable: {why}")
    if _read(Path("/proc/self/autogroup")) is None and _weighing(os.getpid()) is None:
        pytest.skip("no autogroups and no cpu cgroups here: nothing weighs a session")
    starter = subprocess.Popen(
        [sys.executable, "-c", STARTER, sandbox, str(NICE), str(tmp_path)],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = starter.stdout.readline()
        assert line.strip(), starter.stderr.read()[-3000:]
        seen = {int(pid): _weighing(int(pid)) for pid in line.split()}
    finally:
        starter.stdin.close()
        starter.wait(timeout=120)
    expected = {"autogroup": NICE, "cgroup": niceness.weight(NICE)}
    assert seen and all(s is not None and s[1] == expected[s[0]] for s in seen.values()), seen
