"""Litters (judge.sandbox.litter): a submission's workers forked in one sandbox from one process that imported
torch for them all.

Behaviour only, against the real backends: each child is a worker on its own pipes; one is killed without its
siblings; the last one closed takes the sandbox down with everything in it; what a child forges in its parent's
name ends the litter instead of misleading the judge; ``submit`` forks its workers so.
"""

import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from test_pool import usable  # (the backend, or the test skipped where it is missing)

from judge.channel import prepare_message
from judge.problems import find_problem
from judge.sandbox import Job, Limits, get_backend
from judge.sandbox.litter import spawn_litter
from judge.shared import wire

ROOT = Path(__file__).resolve().parent.parent
LIMITS = Limits(
    case_seconds=60, run_seconds=600, memory_mb=4096, output_bytes=1 << 20, processes=256, startup_seconds=60
)
PLAIN = "def add(x, y):\n    return x + y\n"
# At import, in the sandbox: the parent's report stream is its stdout, reachable through /proc as the same user.
FORGES = """import os
with open(f"/proc/{os.getppid()}/fd/1", "w") as parent:
    parent.write('{"exited": 1, "status": 0}\\n{"this": "is not a report"}\\n')


def add(x, y):
    return x + y
"""


def _litter(name, tmp_path, source=PLAIN, n=3):
    sub = tmp_path / "sub.py"
    sub.write_text(source)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    job = Job(submission=sub, scratch=scratch, device="cpu", interpret=True, limits=LIMITS)
    backend = usable(name)
    procs = spawn_litter(backend, job, n)
    assert procs is not None and len(procs) == n
    readers = []
    for p in procs:
        p.nonce = secrets.token_hex(8)
        wire.send(p.stdin, dict(prepare_message(job, backend), nonce=p.nonce))
        readers.append(wire.Reader(p.stdout))
    for r, p in zip(readers, procs):
        message, _ = r.recv(120)
        assert message == {"type": "ready", "nonce": p.nonce, "tensors": []}
    return sub, procs, readers


def _hello(proc, reader, sub):
    wire.send(
        proc.stdin,
        {"type": "setup", "nonce": proc.nonce, "submission": proc.place(sub), "entry": "add", "arity": 2, "threads": 1},
    )
    message, _ = reader.recv(60)
    return message


def _alive(pid):
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("name", ["process", "bwrap"])
def test_each_child_is_a_worker_of_its_own_and_is_killed_alone(name, tmp_path):
    sub, procs, readers = _litter(name, tmp_path)
    litter = procs[0].litter
    pids = [litter.host_pid(p.i) for p in procs]
    assert None not in pids and len(set(pids)) == 3 and litter.proc.pid not in pids
    cgroup = getattr(litter.proc, "cgroup", None)
    if cgroup is not None:  # each child in a cgroup of its own, inside the litter's, before it has its file
        for p in procs:
            p.before_setup()
        assert sorted(litter._cgroups) == [0, 1, 2]
        for i, pid in enumerate(pids):
            assert litter._cgroups[i].pids() == {pid}
            assert pid in cgroup.pids() and litter._cgroups[i].memory_bytes() is not None
            # What it shares from its parent (torch imported) counts, as a lone worker's own import does.
            assert procs[i].memory_bytes() > 100 << 20
    procs[1].kill()
    assert procs[1].wait(10) == -9
    assert procs[0].wait(0) is None and procs[2].wait(0) is None
    # The others still serve: each imports the submission and says hello on its own pipe.
    for i in (0, 2):
        hello = _hello(procs[i], readers[i], sub)
        assert hello["type"] == "hello" and hello["status"] == "ok", hello
        # Its imports were its parent's: what it did itself before "ready" is a fraction of a torch import.
        assert hello["startup"]["imports_seconds"] < 0.5, hello["startup"]
    for p in procs:
        p.close()
    assert litter.proc.wait(10) is not None, "the sandbox outlived its last child"
    assert not any(_alive(pid) for pid in pids)
    if name == "bwrap":
        assert not litter.proc.stage.exists()


@pytest.mark.parametrize("name", ["process", "bwrap"])
def test_a_litter_serves_the_one_file_placed_in_it(name, tmp_path):
    sub, procs, _ = _litter(name, tmp_path, n=2)
    other = tmp_path / "other" / "sub.py"
    other.parent.mkdir()
    other.write_text(PLAIN + "# another file of the same name\n")
    with pytest.raises(RuntimeError):
        procs[0].place(other)
    assert procs[1].place(sub)
    for p in procs:
        p.close()


# Under bwrap a child cannot reach its parent's report stream (its processes are not dumpable, and it has no
# capability); in the process backend the children run as the judge's own user, and what stops them is the
# worker's lockdown (judge.untrusted.lockdown): opening /proc/PPID/fd/1 for writing is refused, a rule.
def test_a_child_cannot_forge_its_parents_report(tmp_path):
    sub, procs, readers = _litter("process", tmp_path, source=FORGES)
    litter = procs[0].litter
    wire.send(
        procs[0].stdin,
        {
            "type": "setup",
            "nonce": procs[0].nonce,
            "submission": procs[0].place(sub),
            "entry": "add",
            "arity": 2,
            "threads": 1,
        },
    )
    hello, _ = readers[0].recv(60)
    assert hello["type"] == "hello" and hello["status"] == "error", hello
    assert hello["error"]["category"] == "rule" and "was refused" in hello["error"]["message"], hello
    assert not litter.failure and all(p.wait(0) is None for p in procs[1:])  # no forged line reached the parent
    for p in procs:
        p.close()


# At import, in each child: the parent's and each sibling's memory and file descriptors, through /proc.
REACHES = """import os
reached = []
for pid in [os.getppid()] + [int(d) for d in os.listdir("/proc") if d.isdigit() and int(d) != os.getpid()]:
    try:
        with open(f"/proc/{pid}/stat") as f:
            if int(f.read().rsplit(")", 1)[1].split()[1]) != os.getppid() and pid != os.getppid():
                continue  # (only the parent and its children: the litter)
        for what, mode in (("mem", "rb+"), ("fd/1", "w")):
            try:
                open(f"/proc/{pid}/{what}", mode).close()
                reached.append(f"{pid}/{what}")
            except OSError:
                pass
    except (OSError, ValueError, IndexError):
        pass
if reached:
    raise SystemExit("reached " + " ".join(reached))


def add(x, y):
    return x + y
"""


def test_a_bwrap_litters_children_cannot_reach_each_other_or_their_parent(tmp_path):
    sub, procs, readers = _litter("bwrap", tmp_path, source=REACHES, n=2)
    for p, r in zip(procs, readers):
        hello = _hello(p, r, sub)
        assert hello["type"] == "hello" and hello["status"] == "ok", hello
    for p in procs:
        p.close()


@pytest.mark.parametrize("name", ["process", "bwrap"])
def test_submit_forks_its_workers_in_a_litter(name, tmp_path):
    usable(name)
    own_tmp = Path(tempfile.mkdtemp(prefix="lt-", dir="/tmp"))  # (the pool's socket path must be short)
    try:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "judge",
                "submit",
                "94",
                str(find_problem("94").reference_path),
                "--device",
                "cpu",
                "--sandbox",
                name,
                "--seed",
                "3",
                "--json",
                "--workers",
                "3",
                "--max-examples",
                "3",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={**os.environ, "TMPDIR": str(own_tmp)},
            timeout=600,
        )
        report = json.loads(proc.stdout)
        assert not list(own_tmp.glob("judge-pool-*")), "the command's pool outlived it"
    finally:
        subprocess.run(["rm", "-rf", str(own_tmp)])
    assert report["timing"].get("litter_starts") == 3 and report["timing"].get("pooled_starts") == 3, report["timing"]
    assert report["verdict"] == "AC", report["message"]


COMPILES = """import os
# As Triton leaves a compile: one directory per kernel variant, in the worker's cache.
entry = os.path.join(os.environ["TRITON_CACHE_DIR"], "variant-" + os.urandom(4).hex())
os.makedirs(entry)
with open(os.path.join(entry, "kernel.cubin"), "w") as f:
    f.write("compiled")


def add(x, y):
    return x + y
"""


@pytest.mark.parametrize("name", ["process", "bwrap"])
def test_a_roster_litter_serves_the_job_that_took_it_first_and_no_other(name, tmp_path, monkeypatch):
    """In a grading pool a litter is forked before any job is known; the first job to take one of its workers
    has its file placed in it, and its siblings go to that job alone, for that file alone, and are killed when
    the job is done. What they compile goes to the file's content cache, as any pooled worker's does."""
    from judge.channel import WorkerChannel
    from judge.pool import client as pool_client
    from judge.pool import key as pool_key
    from judge.pool import server as pool_server

    backend = usable(name)
    files = {}
    for who in ("alice", "bob"):
        (tmp_path / who).mkdir()
        files[who] = tmp_path / who / "sub.py"
        files[who].write_text(COMPILES + f"# {who}\n")
    cache = tmp_path / "cache" / "alice"
    job = lambda who, **kw: Job(  # noqa: E731
        submission=files[who],
        scratch=tmp_path,
        device="cpu",
        interpret=True,
        limits=LIMITS,
        cache=cache if who == "alice" else tmp_path / "cache" / "bob",
        **kw,
    )
    server = pool_server.PoolServer(size=2)
    monkeypatch.setattr(pool_client, "_socket", server.path)
    try:
        assert server.warm(backend, job("alice"), n=2)
        deadline = time.monotonic() + 60
        while server.idle() < 2:
            assert time.monotonic() < deadline, "the pool forked no litter"
            time.sleep(0.1)
        kt = pool_key.key_text(pool_key.key_of(backend, job("alice")))
        litter = server._idle[kt][0].litter
        assert litter is not None and all(e.litter is litter for e in server._idle[kt])
        first = WorkerChannel(backend, job("alice"))
        assert first.pooled and first.proc.placed
        # Bob's file, from the same process: never a sibling of Alice's.
        other = WorkerChannel(backend, job("bob"))
        assert not (other.pooled and other.proc.placed and other.proc.pid == litter.proc.pid)
        second = WorkerChannel(backend, job("alice"))
        assert second.pooled and second.proc.pid == first.proc.pid == litter.proc.pid  # the same sandbox
        channels = [first, second, other]
        try:
            for ch in channels:
                hello = ch.start(submission_entry="add", arity=2, threads=1)
                assert hello.ok, hello.error
        finally:
            for ch in channels:
                ch.close()
        assert litter.proc.wait(10) is not None, "the litter outlived its job's workers"
    finally:
        server.close()
    compiled = sorted(p.name for p in cache.iterdir() if p.name.startswith("variant-"))
    assert len(compiled) == 2, compiled  # both children's compiles, merged into Alice's content cache


def test_a_pooled_litters_directories_go_with_its_last_worker(tmp_path, monkeypatch):
    # A service's pool lives for days: what a litter's children wrote in its scratch must not stay until then.
    from judge.channel import WorkerChannel
    from judge.pool import client as pool_client
    from judge.pool import server as pool_server

    backend = usable("process")
    sub = tmp_path / "sub.py"
    sub.write_text("import os\nopen(os.path.join(os.environ['HOME'], 'left-behind'), 'w').write('x')\n" + PLAIN)
    job = Job(submission=sub, scratch=tmp_path, device="cpu", interpret=True, limits=LIMITS)
    server = pool_server.PoolServer(size=2)
    monkeypatch.setattr(pool_client, "_socket", server.path)
    try:
        assert server.warm(backend, job, n=2)
        deadline = time.monotonic() + 60
        while server.idle() < 2:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        homes = list(Path(server.dir).glob("litter-*"))
        assert len(homes) == 1
        channels = [WorkerChannel(backend, job) for _ in range(2)]
        for ch in channels:
            assert ch.pooled and ch.start(submission_entry="add", arity=2, threads=1).ok
        assert list(homes[0].glob("scratch/*/left-behind"))
        for ch in channels:
            ch.close()
        assert not homes[0].exists(), "a closed litter's directory stayed in the pool's"
    finally:
        server.close()


def test_a_litter_whose_parent_fails_costs_time_not_the_verdict(tmp_path, monkeypatch):
    # Its workers die before "ready": the pool drops them, the session starts its own, and the pool's log says why.
    from judge.options import Options, limits_for
    from judge.pool import client as pool_client
    from judge.pool import server as pool_server
    from judge.sandbox import litter
    from judge.session import Session

    monkeypatch.setattr(litter, "MODULE", "judge.untrusted.no_such_module")
    p93 = find_problem("93")
    options = Options(sandbox="process", seed=1, device="cpu", interpret=True, speed=False, workers=2, max_examples=3)
    job = Job(
        submission=p93.reference_path, scratch=tmp_path, device="cpu", interpret=True, limits=limits_for(p93, options)
    )
    said = []
    server = pool_server.PoolServer(size=2, log=said.append)
    monkeypatch.setattr(pool_client, "_socket", server.path)
    try:
        assert server.warm(get_backend("process"), job, n=2, own_cache=True, litter=True)
        deadline = time.monotonic() + 60
        while not any("litter" in line for line in said):
            assert time.monotonic() < deadline, said
            time.sleep(0.1)
        report = Session(p93, p93.reference_path, options).run()
    finally:
        server.close()
    assert report.verdict.value == "AC", report.message
    assert not report.timing.get("litter_starts") and report.timing.get("worker_starts", 0) >= 1, report.timing
    assert any("parent ended before it forked" in line for line in said), said


FILLS_SCRATCH = """import os, sys
def fill(name):
    try:
        with open(os.path.join(os.environ["HOME"], name), "wb") as f:
            f.write(b"x" * (6 << 20))
            f.flush()
            os.fsync(f.fileno())
        return "ROOM"
    except OSError:
        return "FULL"
print("SCRATCH", os.environ["HOME"], os.getcwd() == os.environ["HOME"], fill("a"), fill("b"), file=sys.stderr)


def add(x, y):
    return x + y
"""


def test_each_child_has_a_scratch_of_a_workers_size_of_its_own(tmp_path):
    # A red-team file of 2026-12-05 used 1.5 GiB of scratch in each worker: AC in a litter whose three children
    # shared one 3 GiB scratch, RTE ("no space left on device") with a worker's own 1 GiB.
    import dataclasses

    sub = tmp_path / "sub.py"
    sub.write_text(FILLS_SCRATCH)
    (tmp_path / "scratch").mkdir()
    limits = dataclasses.replace(LIMITS, scratch_mb=8)
    job = Job(submission=sub, scratch=tmp_path / "scratch", device="cpu", interpret=True, limits=limits)
    backend = usable("bwrap")
    procs = spawn_litter(backend, job, 2)
    try:
        lines = []
        for p in procs:
            p.nonce = secrets.token_hex(8)
            wire.send(p.stdin, dict(prepare_message(job, backend), nonce=p.nonce))
            reader = wire.Reader(p.stdout)
            assert reader.recv(120)[0]["type"] == "ready"
            assert _hello(p, reader, sub)["status"] == "ok"
            err = b""
            while b"SCRATCH" not in err:
                err += os.read(p.stderr, 4096)
            lines.append(next(ln for ln in err.decode().splitlines() if ln.startswith("SCRATCH")))
        # Each: 6 MiB fit, 6 more did not (8 MiB each); and the two are not the same directory.
        assert [ln.split()[2:] for ln in lines] == [["True", "ROOM", "FULL"]] * 2, lines
        assert lines[0].split()[1] != lines[1].split()[1]
    finally:
        for p in procs:
            p.close()


@pytest.mark.parametrize("name", ["process", "bwrap"])
def test_a_child_killed_while_its_parent_is_stopped_ends_without_its_report(name, tmp_path):
    # A child can stop its parent (they share the sandbox's user): the parent then reaps nothing and reports
    # nothing. A red-team file of 2026-12-05 made each close wait about 17 s so; the host's own view of the
    # child's end (its pidfd) now ends the wait about REPORT_SECONDS after the kill.
    import signal

    from judge.sandbox.base import _descendants

    sub, procs, _ = _litter(name, tmp_path, n=2)
    litter = procs[0].litter
    assert litter.host_pid(0) and litter.host_pid(1)
    parent = next(
        pid
        for pid in _descendants(litter.proc.pid)
        if pid not in (litter.host_pid(0), litter.host_pid(1))
        and b"judge.untrusted.litter" in Path(f"/proc/{pid}/cmdline").read_bytes()
    )
    os.kill(parent, signal.SIGSTOP)
    try:
        procs[0].kill()
        started = time.monotonic()
        assert procs[0].wait(10) == -signal.SIGKILL
        assert time.monotonic() - started < 5
        assert procs[1].wait(0) is None
    finally:
        os.kill(parent, signal.SIGCONT)
        for p in procs:
            p.close()
