"""The kernel cache a submission's content shares (issue 13): every sandbox mounts it writable for the
worker, at the path Triton is told to use, and a submission of other bytes gets another directory."""

import os
from pathlib import Path

import pytest

from judge import intake
from judge.channel import WorkerChannel
from judge.sandbox import Job, Limits, get_backend

WRITES_THE_CACHE = '''import os
with open(os.path.join(os.environ["TRITON_CACHE_DIR"], "planted"), "w") as f:
    f.write("x")


def add(x, y):
    return x
'''


def _usable(name):
    backend = get_backend(name)
    why = backend.unavailable("cpu")
    if why:
        pytest.skip(why)
    return backend


@pytest.mark.parametrize("name", ["process", "bwrap", "docker"])
def test_every_sandbox_mounts_the_kernel_cache_where_triton_looks(name, tmp_path):
    backend = _usable(name)
    sub = tmp_path / "sub.py"
    sub.write_text(WRITES_THE_CACHE)
    cache = tmp_path / "cache" / "abc"
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    limits = Limits(case_seconds=30, run_seconds=60, memory_mb=4096, output_bytes=1 << 20, processes=64,
                    startup_seconds=60)
    channel = WorkerChannel(backend, Job(submission=sub, scratch=scratch, device="cpu", interpret=True,
                                         limits=limits, cache=cache))
    try:
        hello = channel.start(submission_entry="add", arity=2, threads=1)
        assert hello.ok, hello.error
    finally:
        channel.close()
    assert (cache / "planted").read_text() == "x"


def test_the_cache_is_keyed_by_content(tmp_path):
    a, b, c = tmp_path / "a.py", tmp_path / "b.py", tmp_path / "c.py"
    a.write_text("x = 1\n")
    b.write_text("x = 1\n")
    c.write_text("x = 2\n")
    key = lambda p: intake.kernel_cache(p, "cuda", False)  # noqa: E731
    assert key(a) == key(b) != key(c)
    assert intake.kernel_cache(a, "cpu", True) is None  # the interpreter compiles nothing
    if os.environ.get("JUDGE_CACHE_DIR"):
        assert str(key(a)).startswith(os.environ["JUDGE_CACHE_DIR"])
    assert Path(key(a)).parent.name == "kernels"


READS_THE_CACHE = '''import os
with open(os.path.join(os.environ["TRITON_CACHE_DIR"], "seeded", "kernel.json")) as f:
    assert f.read() == "compiled before", "the content's cache was not there"
os.makedirs(os.path.join(os.environ["TRITON_CACHE_DIR"], "new"))
with open(os.path.join(os.environ["TRITON_CACHE_DIR"], "new", "kernel.json"), "w") as f:
    f.write("compiled now")


def add(x, y):
    return x
'''


@pytest.mark.parametrize("name", ["process", "bwrap", "docker"])
def test_a_pooled_worker_gets_the_contents_cache_and_gives_back_what_it_compiled(name, tmp_path, monkeypatch):
    """A pooled worker is spawned before its submission's content is known: its own cache directory is filled
    from the content's when it is handed out, and what it added is merged back when it is closed."""
    import time

    from judge import pool

    backend = _usable(name)
    sub = tmp_path / "sub.py"
    sub.write_text(READS_THE_CACHE)
    cache = tmp_path / "cache" / "abc"
    (cache / "seeded").mkdir(parents=True)
    (cache / "seeded" / "kernel.json").write_text("compiled before")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    limits = Limits(case_seconds=30, run_seconds=60, memory_mb=4096, output_bytes=1 << 20, processes=64,
                    startup_seconds=60)
    job = Job(submission=sub, scratch=scratch, device="cpu", interpret=True, limits=limits, cache=cache)
    server = pool.PoolServer(size=1)
    monkeypatch.setenv(pool.ENV, server.path)
    try:
        server.warm(backend, job)
        deadline = time.monotonic() + 60
        while server.idle() < 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        channel = WorkerChannel(backend, job)
        try:
            assert channel.pooled
            hello = channel.start(submission_entry="add", arity=2, threads=1)
            assert hello.ok, hello.error
        finally:
            channel.close()
    finally:
        server.close()
    assert (cache / "new" / "kernel.json").read_text() == "compiled now"
    assert (cache / "seeded" / "kernel.json").read_text() == "compiled before"
