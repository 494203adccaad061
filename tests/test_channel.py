"""The judge's end of a worker, against scripted fake workers: every way a reply can go wrong is a death
with a reason (judge.rules maps it to a verdict), never an exception of the judge's."""

import os
import subprocess
import sys
import textwrap

import pytest

from judge.channel import WorkerChannel, WorkerDied, WorkerStartFailed
from judge.replies import parsers, records
from judge.sandbox import Job, Limits
from judge.sandbox.base import Backend
from judge.sandbox.process import _ChildProc

PRELUDE = textwrap.dedent("""
    import json, os, struct, sys, time
    sys.path.insert(0, %r)
    from judge.shared import wire
    r = wire.Reader(0)
    prepare, _ = r.recv(0)
    nonce = prepare["nonce"]
    def send(msg, tensors=()):
        msg.setdefault("nonce", nonce)
        wire.send(1, msg, list(tensors))
    send({"type": "ready"})
    setup, _ = r.recv(0)
    send({"type": "hello", "status": "ok", "versions": {}, "device_name": "cpu"})
    case, _ = r.recv(1 << 20)
""")


class Scripted(Backend):
    name = "scripted"

    def __init__(self, body: str):
        self.body = body

    def spawn(self, job):
        from judge.sandbox.staging import CODE_ROOT

        code = PRELUDE % str(CODE_ROOT) + textwrap.dedent(self.body)
        popen = subprocess.Popen(
            [sys.executable, "-c", code],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        return _ChildProc(popen, str(job.submission))


def _channel(tmp_path, body, **limits):
    lim = Limits(
        case_seconds=limits.get("case_seconds", 5),
        run_seconds=60,
        memory_mb=4096,
        output_bytes=limits.get("output_bytes", 1 << 20),
        processes=64,
        startup_seconds=10,
    )
    job = Job(submission=tmp_path / "s.py", scratch=tmp_path, device="cpu", interpret=True, limits=lim)
    ch = WorkerChannel(Scripted(body), job)
    hello = ch.start(submission_entry="add", arity=2, threads=1)
    assert hello.ok
    ch.send_case({"type": "case", "id": 1, "args": []}, [])
    return ch


@pytest.mark.parametrize(
    "body,reason,text",
    [
        (
            'send({"type": "result", "id": 1, "status": "ok", "outputs": ["x"]})',
            "protocol",
            "an output must be an object",
        ),
        (
            'send({"type": "result", "id": 1, "status": "ok"}, ); send({"junk": 1}, [({"dtype": "float32", "shape": [1]}, b"abc")])',
            None,
            None,
        ),
        ('send({"type": "result", "id": 1, "status": "ok", "nonce": "forged"})', "protocol", "secret"),
        ('wire.write_frame(1, b"not json")', "protocol", "malformed"),
        ("time.sleep(30)", "timeout", "timed out"),
        ("os._exit(3)", "crash", "status 3"),
        ('sys.stderr.write("x" * 100000); sys.stderr.flush(); time.sleep(30)', "output", "printed more than"),
        (
            'send({"type": "result", "id": 1, "status": "ok", "outputs": [{"kind": "tensor", "dtype": "float32", '
            '"shape": [1 << 30]}]}, [({"dtype": "float32", "shape": [1 << 30]}, b"")])',
            "output",
            "limit",
        ),
    ],
)
def test_every_broken_reply_is_a_death_with_a_reason(tmp_path, body, reason, text):
    ch = _channel(tmp_path, body, case_seconds=3, output_bytes=50_000)
    try:
        if reason is None:  # a well-formed first reply is a record; what follows it is not read as part of it
            assert isinstance(ch.receive(parsers.parse_case_reply, timeout=3, max_bytes=1 << 20), records.CaseResult)
            return
        with pytest.raises(WorkerDied) as died:
            ch.receive(parsers.parse_case_reply, timeout=3, max_bytes=1 << 20)
        assert died.value.reason == reason and text in died.value.detail, died.value.detail
    finally:
        ch.close()


@pytest.mark.parametrize("already_dead", [False, True])
def test_a_worker_that_dies_before_it_is_ready_is_the_judges_problem(tmp_path, already_dead):
    # already_dead: gone before "prepare" and "setup" are written to it (a CI run under load saw that race:
    # WorkerDied "in the middle of a case", which a session would have made the submission's crash). Either
    # way no submission ran in it: its environment failed.
    class Dies(Backend):
        name = "dies"

        def spawn(self, job):
            popen = subprocess.Popen(
                [sys.executable, "-c", "import sys; sys.exit(1)"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
            if already_dead:
                popen.wait()
            return _ChildProc(popen, "x")

    lim = Limits(case_seconds=5, run_seconds=60, memory_mb=4096, output_bytes=1 << 20, processes=64, startup_seconds=5)
    ch = WorkerChannel(
        Dies(), Job(submission=tmp_path / "s.py", scratch=tmp_path, device="cpu", interpret=True, limits=lim)
    )
    with pytest.raises(WorkerStartFailed):
        ch.start(submission_entry="add", arity=2, threads=1)
    ch.close()


class SlowEnvironment(Backend):
    """A worker whose own start (importing torch and Triton, in a real one) takes longer than the
    submission's startup limit, then imports a submission that takes ``load`` seconds."""

    name = "slow-environment"

    def __init__(self, load: float):
        self.load = load

    def spawn(self, job):
        from judge.sandbox.staging import CODE_ROOT

        code = textwrap.dedent(f"""
            import sys, time
            sys.path.insert(0, {str(CODE_ROOT)!r})
            from judge.shared import wire
            r = wire.Reader(0)
            prepare, _ = r.recv(0)
            time.sleep(2.5)  # the environment's start: longer than the 1 s startup limit
            wire.send(1, {{"type": "ready", "nonce": prepare["nonce"]}}, [])
            setup, _ = r.recv(0)
            time.sleep({self.load})  # the submission's import
            wire.send(1, {{"type": "hello", "status": "ok", "versions": {{}}, "device_name": "cpu",
                           "nonce": setup["nonce"]}}, [])
            time.sleep(30)
        """)
        popen = subprocess.Popen(
            [sys.executable, "-c", code],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        return _ChildProc(popen, str(job.submission))


@pytest.mark.parametrize("load,died", [(0.0, None), (3.0, "timeout")])
def test_the_startup_limit_counts_the_submissions_import_not_the_environments(tmp_path, load, died):
    # CI once turned a submission that hangs at import (TLE) into IE: on 2 loaded cores the worker's
    # torch import alone outlasted the shortened startup limit, which then also timed the import of torch.
    lim = Limits(case_seconds=5, run_seconds=60, memory_mb=4096, output_bytes=1 << 20, processes=64, startup_seconds=1)
    ch = WorkerChannel(
        SlowEnvironment(load),
        Job(submission=tmp_path / "s.py", scratch=tmp_path, device="cpu", interpret=True, limits=lim),
    )
    try:
        if died is None:
            assert ch.start(submission_entry="add", arity=2, threads=1).ok
        else:  # a death while loading the submission (TLE for it), not a worker that could not start (IE)
            with pytest.raises(WorkerDied) as exc:
                ch.start(submission_entry="add", arity=2, threads=1)
            assert exc.value.reason == died
    finally:
        ch.close()


def test_a_real_worker_asked_to_exit_exits_by_itself_even_with_exit_handlers(tmp_path):
    # It used to return through the interpreter's shutdown (torch's, Triton's, and any handler the file
    # registered), which outlasted close()'s grace: every worker was killed, two seconds each, one after the
    # other, before every speed run and at every end. Now it leaves at once, with status 0, not killed.
    from judge.sandbox.process import ProcessBackend

    sub = tmp_path / "s.py"
    sub.write_text(
        textwrap.dedent("""
        import atexit, time
        atexit.register(time.sleep, 30)

        def add(x, y):
            return x + y
    """)
    )
    lim = Limits(
        case_seconds=60, run_seconds=120, memory_mb=4096, output_bytes=1 << 20, processes=64, startup_seconds=120
    )
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    channels = [
        WorkerChannel(ProcessBackend(), Job(submission=sub, scratch=scratch, device="cpu", interpret=True, limits=lim))
        for _ in range(2)
    ]
    for ch in channels:
        assert ch.start(submission_entry="add", arity=2, threads=1).ok
    for ch in channels:
        ch.request_exit()
    for ch in channels:
        ch.close()
        assert ch.proc.popen.returncode == 0  # -9 when close() had to kill it


def test_the_memory_watch_reads_the_cheap_upper_bound_below_its_threshold():
    """RSS (statm) is never below PSS: below ``exact_above`` the watch may take it; from there up, PSS."""
    import os

    from judge.sandbox.base import process_tree_memory

    # It says when its 64 MiB are written (all resident): RSS over 64 MiB alone came sooner, its interpreter's
    # pages and part of the buffer (CI once read PSS 63.75 MiB then, and RSS 74.7 MiB).
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; b = bytearray(64 << 20); print('ready', flush=True); time.sleep(30)"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout.readline().strip() == "ready"
        # Each PSS read before the RSS it is held against: a process still growing (its interpreter's last
        # pages, under load) only widens the gap that way (CI once read RSS 71.1 MB, then PSS 72.7 MB).
        pss = process_tree_memory(child.pid)
        rss = process_tree_memory(child.pid, exact_above=1 << 40)
        assert pss <= rss and pss > 64 << 20, (pss, rss)
        exact = process_tree_memory(child.pid, exact_above=0)  # at or over the threshold: PSS
        assert exact <= process_tree_memory(child.pid, exact_above=1 << 40)
        own = process_tree_memory(os.getpid())
        assert process_tree_memory(os.getpid(), exact_above=1 << 40) >= own
    finally:
        child.kill()
        child.wait()


def test_the_memory_watch_sees_a_grandchild_forked_after_its_last_scan():
    """The host's process table is read once for every watcher of a judge (judge.sandbox.base.TABLE_SECONDS): a
    process a worker forks after one scan, holding memory, is in the worker's tree by the next one."""
    import time

    from judge.sandbox import base

    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys, time\n"
            "input()\n"
            "subprocess.Popen([sys.executable, '-c', 'b = bytearray(96 << 20); print(1, flush=True); "
            "import time; time.sleep(30)'])\n"
            "time.sleep(30)",
        ],
        stdin=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(0.5)
        before = base._descendants(child.pid)
        assert before == {child.pid}
        child.stdin.write("go\n")
        child.stdin.flush()
        deadline = time.monotonic() + 20
        while len(base._descendants(child.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        tree = base._descendants(child.pid)
        assert len(tree) == 2, tree
        grandchild = (tree - {child.pid}).pop()
        while base._rss(grandchild) < 96 << 20 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert base.process_tree_memory(child.pid, exact_above=1 << 40) > 96 << 20
    finally:
        for pid in base._descendants(child.pid) - {child.pid}:
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        child.kill()
        child.wait()
