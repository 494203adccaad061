"""The worker pool (judge.pool): warm workers handed to jobs, one submission each, behind the same sandbox.

Behaviour only, never a time: a pooled worker serves exactly one submission and is gone after it; it sees
its own file alone, read-only (bwrap, docker); its replies go through the same parsers; a job that finds
none warm starts its own; the pool's verdicts are the judge's verdicts without it.
"""

import os
import time
from contextlib import closing
from pathlib import Path

import pytest

from judge.channel import WorkerChannel
from judge.options import Options, limits_for
from judge.pool import client as pool_client
from judge.pool import copies as pool_copies
from judge.pool import key as pool_key
from judge.pool import server as pool_server
from judge.problems import find_problem
from judge.sandbox import Job, Limits, get_backend
from judge.session import Session

ROOT = Path(__file__).resolve().parent.parent
P93 = find_problem("93")
LIMITS = Limits(
    case_seconds=60, run_seconds=600, memory_mb=4096, output_bytes=1 << 20, processes=256, startup_seconds=60
)

LOOKS_AROUND = """import os, sys
here = os.path.dirname(os.path.abspath(__file__))
print("LISTED", sorted(os.listdir(here)), file=sys.stderr)
try:
    open(os.path.join(here, "planted.py"), "w").write("x = 1")
    print("WROTE", file=sys.stderr)
except OSError as exc:
    print("REFUSED", exc.errno, file=sys.stderr)
print("MODULES", sorted(m for m in sys.modules if m.startswith("submission")), file=sys.stderr)


def add(x, y):
    return x
"""


def usable(name):
    backend = get_backend(name)
    why = backend.unavailable("cpu")
    if why:
        pytest.skip(why)
    return backend


@pytest.fixture
def server(monkeypatch):
    # Workers spawned one by one: these tests hand them to several files from one process, where a litter's
    # workers would all go to the first (tests/test_litter.py tests the pool's litters).
    srv = pool_server.PoolServer(size=2, litters=False)
    monkeypatch.setattr(pool_client, "_socket", srv.path)
    yield srv
    srv.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purposes
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _warm(srv, backend, job, n=1, timeout=120.0):
    assert srv.warm(backend, job, n)
    deadline = time.monotonic() + timeout
    while srv.idle() < n:
        assert time.monotonic() < deadline, "the pool spawned no worker"
        time.sleep(0.1)


def _job(sub: Path, tmp_path: Path, **kw) -> Job:
    scratch = tmp_path / f"scratch-{sub.stem}"
    scratch.mkdir(exist_ok=True)
    return Job(**{"submission": sub, "scratch": scratch, "device": "cpu", "interpret": True, "limits": LIMITS, **kw})


def test_a_pooled_worker_serves_exactly_one_submission(server, tmp_path):
    backend = usable("process")
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("def add(x, y):\n    return x\n")
    b.write_text("def add(x, y):\n    return y\n")
    _warm(server, backend, _job(a, tmp_path))
    with closing(WorkerChannel(backend, _job(a, tmp_path))) as first:
        assert first.pooled
        hello = first.start(submission_entry="add", arity=2, threads=1)
        assert hello.ok, hello.error
        assert hello.startup.get("waited_seconds", 0) >= 0
        pid = first.proc.pid
    assert not _alive(pid), "the worker outlived its submission"
    assert server.stats["taken"] == 1
    # The next submission gets another worker (the pool replaced the one it handed out), never that one.
    _warm(server, backend, _job(b, tmp_path))
    with closing(WorkerChannel(backend, _job(b, tmp_path))) as second:
        assert second.pooled and second.proc.pid != pid
        assert second.start(submission_entry="add", arity=2, threads=1).ok


def test_without_a_warm_worker_the_job_starts_its_own(server, tmp_path):
    backend = usable("process")
    sub = tmp_path / "a.py"
    sub.write_text("def add(x, y):\n    return x\n")
    with closing(
        WorkerChannel(backend, _job(sub, tmp_path))
    ) as ch:  # a kind the pool has not seen: it starts one for next time
        assert not ch.pooled
        assert ch.start(submission_entry="add", arity=2, threads=1).ok
    assert server.stats["missed"] == 1
    # A worker of another kind (more memory) is never handed to this one.
    other = _job(sub, tmp_path, limits=Limits(**{**LIMITS.__dict__, "memory_mb": 2048}))
    _warm(server, backend, _job(sub, tmp_path))
    with closing(WorkerChannel(backend, other)) as ch:
        assert not ch.pooled


def test_a_dropped_job_takes_its_workers_with_it(server, tmp_path):
    """A job that dies (its connection to the pool closes) leaves no worker behind: the pool kills it."""
    backend = usable("process")
    sub = tmp_path / "a.py"
    sub.write_text("def add(x, y):\n    return x\n")
    _warm(server, backend, _job(sub, tmp_path))
    lease = pool_client.take(backend, _job(sub, tmp_path))
    assert lease is not None and lease.proc is not None
    pid = lease.proc.pid
    lease.proc._conn.close()  # as if the job process died
    deadline = time.monotonic() + 30
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid)


@pytest.mark.parametrize("name", ["bwrap", "docker"])
def test_a_pooled_sandbox_shows_its_own_file_alone_read_only(server, tmp_path, name):
    backend = usable(name)
    subs = []
    for who in ("alice", "bob"):
        d = tmp_path / who
        d.mkdir()
        (d / f"{who}.py").write_text(LOOKS_AROUND)
        (d / "secret_reference.py").write_text("SECRET = 1\n")  # beside the file on the host: never shown
        subs.append(d / f"{who}.py")
    _warm(server, backend, _job(subs[0], tmp_path), n=2)
    channels = [WorkerChannel(backend, _job(sub, tmp_path)) for sub in subs]
    try:
        for ch in channels:
            assert ch.pooled
        for ch in channels:
            assert ch.start(submission_entry="add", arity=2, threads=1).ok
    finally:
        for ch in channels:
            ch.close()
    for sub, ch in zip(subs, channels):
        text = ch.output_text()
        assert f"LISTED ['{sub.name}']" in text, text  # its own file, no other submission, nothing beside it
        assert "REFUSED" in text and "WROTE" not in text, text
        assert "MODULES ['submission']" in text, text  # nothing of a submission ran in it before its own
        assert not (sub.parent / "planted.py").exists()
        assert not ch.proc.submission_dir.exists(), "the worker's submission directory was left behind"


def test_a_pooled_worker_still_takes_the_integrity_snapshot_before_the_import(server, tmp_path):
    backend = usable("process")
    sub = tmp_path / "tamper.py"
    sub.write_text("import time\ntime.perf_counter = lambda: 0.0\n\ndef add(x, y):\n    return x\n")
    _warm(server, backend, _job(sub, tmp_path))
    with closing(WorkerChannel(backend, _job(sub, tmp_path))) as ch:
        assert ch.pooled
        hello = ch.start(submission_entry="add", arity=2, threads=1)
    assert not hello.ok and hello.error.category == "rule" and "time.perf_counter" in hello.error.message


CORPUS = [("AC", P93.reference_path)] + [
    (v, p)
    for v, p in P93.corpus()
    if p.stem in ("always_float32", "segfault", "exploit2_reply_1", "redteam_guard_state")
]


@pytest.mark.corpus
# bwrap in the README's command (a real sandbox's pool), the process backend under -m full.
@pytest.mark.parametrize("name", [pytest.param("process", marks=pytest.mark.full), "bwrap"])
def test_the_pool_gives_the_verdicts_the_judge_gives_without_it(name, tmp_path, monkeypatch):
    usable(name)
    options = Options(sandbox=name, seed=7, device="cpu", interpret=True, speed=False, workers=1)
    without = {p.name: Session(P93, p, options).run() for _, p in CORPUS}
    srv = pool_server.PoolServer(size=2)
    monkeypatch.setattr(pool_client, "_socket", srv.path)
    try:
        backend = get_backend(name)
        job = Job(
            submission=CORPUS[0][1], scratch=tmp_path, device="cpu", interpret=True, limits=limits_for(P93, options)
        )
        _warm(srv, backend, job)
        srv.warm(backend, Job(**{**job.__dict__, "module": "judge.untrusted.replay"}))
        with_pool = {p.name: Session(P93, p, options).run() for _, p in CORPUS}
        taken = srv.stats["taken"]
    finally:
        srv.close()
    assert taken >= 2, "the sessions did not take their workers from the pool"
    for expected, path in CORPUS:
        a, b = without[path.name], with_pool[path.name]
        assert a.verdict.value == expected
        assert (b.verdict, b.message, [(g.name, g.verdict, g.message) for g in b.groups]) == (
            a.verdict,
            a.message,
            [(g.name, g.verdict, g.message) for g in a.groups],
        ), path.name
        if a.timing.get("worker_starts"):  # (a file refused from its source alone starts no worker)
            assert b.timing.get("pooled_starts", 0) >= 1, path.name


def test_pool_sizes_parse_and_a_bad_one_is_one_line(tmp_path):
    import subprocess
    import sys

    assert (
        pool_server.parse_size("off") == 0
        and pool_server.parse_size("auto") == pool_server.DEFAULT_SIZE
        and pool_server.parse_size("3") == 3
    )
    with pytest.raises(ValueError):
        pool_server.parse_size("-1")
    (tmp_path / "alice.py").write_text("def add(x, y):\n    return x\n")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "judge",
            "grade",
            str(tmp_path),
            "--problem",
            "93",
            "--device",
            "cpu",
            "--out",
            str(tmp_path / "out"),
            "--pool",
            "x",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 2 and "--pool x" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_submit_in_the_interpreter_hands_its_head_start_workers_to_the_session(tmp_path):
    # `judge submit` on a CPU spawns its session's workers (the case worker and the replay worker) before it
    # imports torch itself (judge.pool.head_start); the session must get exactly those, and none may outlive
    # the command.
    import json
    import subprocess
    import sys
    import tempfile

    # A temporary directory of the command's own (short: the pool's socket path must fit a Unix socket's).
    own_tmp = Path(tempfile.mkdtemp(prefix="hs-", dir="/tmp"))
    env = {**os.environ, "TMPDIR": str(own_tmp)}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "judge",
            "submit",
            "93",
            str(P93.reference_path),
            "--device",
            "cpu",
            "--sandbox",
            "process",
            "--seed",
            "1",
            "--json",
            "--workers",
            "1",
            "--max-examples",
            "2",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    report = json.loads(proc.stdout)
    assert report["verdict"] == "AC", report["message"]
    assert report["timing"].get("pooled_starts") == 1 and report["timing"].get("replay_pooled") == 1, report["timing"]
    # The command's own time before its session (the python start, its imports) is in the report too.
    t = report["timing"]
    assert t["command_start_seconds"] >= t["command_torch_seconds"] > 0, t
    left = list(own_tmp.glob("judge-pool-*"))
    assert not left, f"the command's pool outlived it: {left}"
    import shutil

    shutil.rmtree(own_tmp, ignore_errors=True)


def test_a_submit_child_takes_its_workers_from_the_pool_named_on_its_command_line(server, tmp_path):
    # `selftest --jobs N --pool auto` judges its files in `submit` children and hands each its pool's socket on
    # the command line (submit's --pool-socket): the child takes its case worker and its replay worker there,
    # and gives itself no head start of its own.
    import json
    import subprocess
    import sys

    backend = usable("process")
    options = Options(sandbox="process", device="cpu", interpret=True)
    job = Job(
        submission=P93.reference_path, scratch=tmp_path, device="cpu", interpret=True, limits=limits_for(P93, options)
    )
    _warm(server, backend, job)
    assert server.warm(backend, Job(**{**job.__dict__, "module": "judge.untrusted.replay"}))
    deadline = time.monotonic() + 120
    while server.idle() < 2:  # the case worker and the replay worker, both up
        assert time.monotonic() < deadline, "the pool spawned no replay worker"
        time.sleep(0.1)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "judge",
            "submit",
            "93",
            str(P93.reference_path),
            "--device",
            "cpu",
            "--sandbox",
            "process",
            "--seed",
            "1",
            "--json",
            "--workers",
            "1",
            "--max-examples",
            "2",
            "--pool-socket",
            server.path,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = json.loads(proc.stdout)
    assert report["verdict"] == "AC", report["message"]
    assert report["timing"].get("pooled_starts") == 1 and report["timing"].get("replay_pooled") == 1, report["timing"]
    assert server.stats["taken"] == 2


def test_selftest_names_its_pool_to_its_submit_children(monkeypatch):
    import subprocess

    from judge import selftest

    argvs = []
    monkeypatch.setattr(
        selftest.subprocess,
        "run",
        lambda argv, **kw: argvs.append(argv) or subprocess.CompletedProcess(argv, 0, "{}", ""),
    )
    base = Options(sandbox="process", device="cpu", interpret=True)
    selftest.judge_via_cli(P93, "AC", P93.reference_path, base, workers=1)
    monkeypatch.setattr(pool_client, "_socket", "/run/judge-pool-x/pool.sock")
    selftest.judge_via_cli(P93, "AC", P93.reference_path, base, workers=1)
    assert "--pool-socket" not in argvs[0]
    assert argvs[1][argvs[1].index("--pool-socket") + 1] == "/run/judge-pool-x/pool.sock"


def test_wait_spawned_returns_once_every_ordered_spawn_is_over(server, tmp_path):
    # head_start waits here before the judge imports torch (whose import would hold the GIL the spawns need).
    backend = usable("process")
    sub = tmp_path / "a.py"
    sub.write_text("def add(x, y):\n    return x\n")
    assert server.warm(backend, _job(sub, tmp_path), n=2)
    assert server.wait_spawned(timeout=60)
    assert server.idle() == 2  # at once: no poll


def test_the_first_worker_is_the_one_the_pool_spawned_first(server, tmp_path):
    # Every case waits for the first worker: it must take the worker warm longest, not the pool's youngest.
    from judge.exchange import Workers

    backend = usable("process")
    sub = tmp_path / "a.py"
    sub.write_text("def add(x, y):\n    return x + y\n")
    job = _job(sub, tmp_path)
    _warm(server, backend, job, n=2)
    kt = pool_key.key_text(pool_key.key_of(backend, job))
    oldest = server._idle[kt][0].proc.pid
    workers = Workers(P93, job, backend, threads=1, count=2)
    try:
        assert workers.start() is None
        assert workers.first.channel.pooled
        assert workers.first.channel.proc.pid == oldest
    finally:
        workers.stop()


def test_a_copy_into_a_cache_a_worker_holds_cannot_be_turned_onto_the_host(tmp_path):
    # A worker's cache is mounted into it while the judge copies entries in (share_compiles, the content cache,
    # judge.driver_modules' seeding). The first version built each entry under a hidden name inside that cache:
    # the worker could swap it for a link to any host directory and have the rest written there (a red-team
    # helper, 2026-12-05). Here a thread plays the worker, swapping every new name it sees for such a link.
    import threading

    src, dest, outside = tmp_path / "src", tmp_path / "dest", tmp_path / "outside"
    for d in (src / "E", dest, outside):
        d.mkdir(parents=True)
    with open(src / "E" / "a_big", "wb") as f:
        f.write(b"\0" * (64 << 20))  # keeps the copy open long enough to be seen
    (src / "E" / "z.so").write_bytes(b"planted")
    stop = threading.Event()

    def worker():
        while not stop.is_set():
            for name in os.listdir(dest):
                if name.startswith("."):
                    try:
                        os.rename(dest / name, tmp_path / f"moved{name}")
                        os.symlink(outside, dest / name)
                    except OSError:
                        pass

    t = threading.Thread(target=worker)
    t.start()
    try:
        pool_copies.copy_entries(src, dest, ["E"])
    finally:
        stop.set()
        t.join()
    assert os.listdir(outside) == []
    assert (dest / "E" / "z.so").read_bytes() == b"planted"
    assert not (dest / "E").is_symlink()


def test_a_sparse_file_is_not_copied_out_in_full(tmp_path):
    # A worker's sparse file costs it no disk; copied into each sibling's cache it would cost the host its
    # whole size each time. Triton writes no sparse files: such an entry is left out (compiled again).
    src, dest = tmp_path / "src", tmp_path / "dest"
    for d in (src / "sparse", src / "plain", dest):
        d.mkdir(parents=True)
    with open(src / "sparse" / "k.cubin", "wb") as f:
        f.truncate(64 << 20)
    (src / "plain" / "k.cubin").write_bytes(os.urandom(200 << 10))
    assert pool_copies.copy_entries(src, dest) == 1
    assert os.listdir(dest) == ["plain"]
    assert (dest / "plain" / "k.cubin").read_bytes() == (src / "plain" / "k.cubin").read_bytes()


def test_a_sessions_workers_close_side_by_side():
    # Before the speed run the test workers are stopped; each close waits for its worker's exit (a CUDA
    # context taken down) and has the pool remove its directories. One after the other that was 1.13 s for
    # 12 workers before softmax's speed run (its reference on the H200, tests/gpu/RESULTS.md, 2026-12-05
    # sixth session). The barrier passes only when every close is under way at once.
    import threading

    from judge.exchange import Workers

    n = 4
    together = threading.Barrier(n, timeout=10)
    asked, closed = [], []

    class Channel:
        def request_exit(self):
            asked.append(self)

    class Ex:
        def __init__(self):
            self.channel = Channel()

        def stop(self):
            if self.channel is not None:
                together.wait()
                closed.append(self)
                self.channel = None

    workers = Workers.__new__(Workers)
    workers.all, workers._starts, workers._pool = [Ex() for _ in range(n)], [], None
    workers.stop()
    assert len(asked) == n and len(closed) == n and all(ex.channel is None for ex in workers.all)
