"""The kernel cache a submission's content shares (issue 13): every sandbox mounts it writable for the
worker, at the path Triton is told to use, and a submission of other bytes gets another directory."""

import dataclasses
import os
from pathlib import Path

import pytest

from judge import intake
from judge.channel import WorkerChannel
from judge.sandbox import Job, Limits, get_backend
from judge.settings import settings

WRITES_THE_CACHE = """import os
with open(os.path.join(os.environ["TRITON_CACHE_DIR"], "planted"), "w") as f:
    f.write("x")


def add(x, y):
    return x
"""


LIMITS = Limits(case_seconds=30, run_seconds=60, memory_mb=4096, output_bytes=1 << 20, processes=64, startup_seconds=60)


def _job(tmp_path, source: str) -> Job:
    """A CPU job for a file of ``source``, with the content's kernel cache at tmp_path/cache/abc."""
    sub = tmp_path / "sub.py"
    sub.write_text(source)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    return Job(
        submission=sub, scratch=scratch, device="cpu", interpret=True, limits=LIMITS, cache=tmp_path / "cache" / "abc"
    )


def _usable(name):
    backend = get_backend(name)
    why = backend.unavailable("cpu")
    if why:
        pytest.skip(why)
    return backend


@pytest.mark.parametrize("name", ["process", "bwrap", "docker"])
def test_every_sandbox_mounts_the_kernel_cache_where_triton_looks(name, tmp_path):
    backend = _usable(name)
    job = _job(tmp_path, WRITES_THE_CACHE)
    cache = job.cache
    channel = WorkerChannel(backend, job)
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


READS_THE_CACHE = """import os
with open(os.path.join(os.environ["TRITON_CACHE_DIR"], "seeded", "kernel.json")) as f:
    assert f.read() == "compiled before", "the content's cache was not there"
os.makedirs(os.path.join(os.environ["TRITON_CACHE_DIR"], "new"))
with open(os.path.join(os.environ["TRITON_CACHE_DIR"], "new", "kernel.json"), "w") as f:
    f.write("compiled now")


def add(x, y):
    return x
"""


@pytest.mark.parametrize("name", ["process", "bwrap", "docker"])
def test_a_pooled_worker_gets_the_contents_cache_and_gives_back_what_it_compiled(name, tmp_path, monkeypatch):
    """A pooled worker is spawned before its submission's content is known: its own cache directory is filled
    from the content's when it is handed out, and what it added is merged back when it is closed."""
    import time

    from judge.pool import client as pool_client
    from judge.pool import server as pool_server

    backend = _usable(name)
    job = _job(tmp_path, READS_THE_CACHE)
    cache = job.cache
    (cache / "seeded").mkdir(parents=True)
    (cache / "seeded" / "kernel.json").write_text("compiled before")
    server = pool_server.PoolServer(size=1)
    monkeypatch.setattr(pool_client, "_socket", server.path)
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


COMPILES_ON_IMPORT = """import os
# What Triton leaves after a compile, as this worker's own entry: one directory per kernel variant.
entry = os.path.join(os.environ["TRITON_CACHE_DIR"], "variant-" + os.urandom(4).hex())
os.makedirs(entry)
with open(os.path.join(entry, "kernel.cubin"), "w") as f:
    f.write("compiled by " + entry)


def add(x, y):
    return x
"""


def _warm_pool(backend, job, monkeypatch, n: int, litters: bool = True, **warm):
    """A pool of ``n`` warm workers of ``job`'s kind (this process takes its workers from it), once they are up."""
    import time

    from judge.pool import client as pool_client
    from judge.pool import server as pool_server

    server = pool_server.PoolServer(size=n, litters=litters)
    monkeypatch.setattr(pool_client, "_socket", server.path)
    server.warm(backend, job, n=n, **warm)
    deadline = time.monotonic() + 60
    while server.idle() < n and time.monotonic() < deadline:
        time.sleep(0.1)
    return server


@pytest.mark.parametrize("name", ["process", "bwrap"])
def test_a_submissions_workers_hand_each_other_what_they_compiled(name, tmp_path, monkeypatch):
    """Pooled workers cache kernels in directories of their own: between cases the judge hands one
    worker's new entries to its siblings and to the content's cache (Workers.share_compiles), so the
    siblings load a variant instead of compiling it again (issue 13)."""
    from judge.exchange import Workers
    from judge.problems import find_problem

    backend = _usable(name)
    job = _job(tmp_path, COMPILES_ON_IMPORT)
    cache = job.cache
    # Spawned one by one (a roster litter's children share one directory: test_litter).
    server = _warm_pool(backend, job, monkeypatch, 2, litters=False)
    try:
        workers = Workers(find_problem("93"), job, backend, threads=1, count=2)
        try:
            assert workers.start() is None
            first, second = workers.ready()
            dirs = [first.kernel_cache(), second.kernel_cache()]
            assert None not in dirs and dirs[0] != dirs[1] != cache  # pooled: a directory each
            own = [sorted(p.name for p in d.iterdir() if p.name.startswith("variant-")) for d in dirs]
            assert len(own[0]) == len(own[1]) == 1 and own[0] != own[1]
            # What is not a whole, plain entry stays where it is: Triton's temporaries, a link out.
            (dirs[0] / "tmp.pid_1_x").mkdir()
            secret = tmp_path / "host-secret"
            secret.write_text("not the worker's")
            (dirs[0] / "linked").mkdir()
            (dirs[0] / "linked" / "kernel.cubin").symlink_to(secret)
            assert workers.share_compiles(first) == 2  # the sibling's directory and the content's
            got = (dirs[1] / own[0][0] / "kernel.cubin").read_text()
            assert got == (dirs[0] / own[0][0] / "kernel.cubin").read_text()
            assert (cache / own[0][0] / "kernel.cubin").exists()
            for d in (dirs[1], cache):
                assert not (d / "tmp.pid_1_x").exists() and not (d / "linked").exists()
            assert workers.share_compiles(first) == 0  # each entry is handed over once
            assert not (dirs[0] / own[1][0]).exists()  # the other way only when that one compiles
        finally:
            workers.stop()
    finally:
        server.close()


@pytest.mark.parametrize("name", ["process", "bwrap"])
def test_head_start_workers_mount_their_files_cache_and_serve_no_other_file(name, tmp_path, monkeypatch):
    """submit's head start spawns its workers for one known file (judge.pool.head_start): they mount that
    file's content cache itself, so what one compiles is at once the others' (and two compiling the same
    variant take its compile lock in it); a job of another file's cache is never handed one of them."""
    from judge.exchange import Workers
    from judge.pool import client as pool_client
    from judge.problems import find_problem

    backend = _usable(name)
    job = _job(tmp_path, COMPILES_ON_IMPORT)
    cache = job.cache
    server = _warm_pool(backend, job, monkeypatch, 2, own_cache=True)
    try:
        # Another file (other bytes, so another content cache) of the same kind: none of these for it.
        other = dataclasses.replace(job, cache=tmp_path / "cache" / "other")
        lease = pool_client.take(backend, other)
        assert lease is not None and lease.proc is None, "a worker holding one file's cache went to another"
        lease.close()
        workers = Workers(find_problem("93"), job, backend, threads=1, count=2)
        try:
            assert workers.start() is None
            first, second = workers.ready()
            assert first.channel.pooled and second.channel.pooled
            assert first.kernel_cache() == second.kernel_cache() == cache
            own = sorted(p.name for p in cache.iterdir() if p.name.startswith("variant-"))
            assert len(own) == 2, own  # both wrote into the content's cache, nothing was copied
            assert workers.share_compiles(first) == 0
        finally:
            workers.stop()
        assert server.stats["taken"] == 2 and server.stats["missed"] == 1, server.stats
    finally:
        server.close()
    assert sorted(p.name for p in cache.iterdir() if p.name.startswith("variant-")) == own


def test_one_copy_takes_a_bounded_number_of_entries_and_bytes(tmp_path, monkeypatch):
    # A worker that filled its cache with many entries has only so many copied, by the close of a pooled
    # worker (into the content's cache) as by any other copy.
    from judge.pool import copies as pool_copies

    src, dest = tmp_path / "src", tmp_path / "dest"
    for i in range(6):
        (src / f"e{i}").mkdir(parents=True)
        (src / f"e{i}" / "kernel.cubin").write_bytes(b"x" * 100)
    dest.mkdir()
    monkeypatch.setattr(pool_copies, "COPY_MAX_ENTRIES", 4)
    assert pool_copies.copy_entries(src, dest) == 4 and len(list(dest.iterdir())) == 4
    monkeypatch.setattr(pool_copies, "COPY_MAX_ENTRIES", 4096)
    monkeypatch.setattr(pool_copies, "COPY_MAX_BYTES", 150)  # the entry that passes the bytes is the last
    (tmp_path / "dest2").mkdir()
    assert pool_copies.copy_entries(src, tmp_path / "dest2") == 2


def test_copy_entries_takes_plain_files_of_a_bounded_size_only(tmp_path, monkeypatch):
    from judge.pool import copies as pool_copies

    src, dest = tmp_path / "src", tmp_path / "dest"
    dest.mkdir()
    (src / "ok" / "sub").mkdir(parents=True)
    (src / "ok" / "sub" / "a.json").write_text("{}")
    (src / "fifo").mkdir()
    os.mkfifo(src / "fifo" / "pipe")
    (src / "big").mkdir()
    (src / "big" / "blob").write_bytes(b"x" * 2048)
    (src / ".half").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "host-file").write_text("the host's")
    (src / "link").symlink_to(tmp_path / "outside")
    (src / "deeper" / "a").mkdir(parents=True)
    (src / "deeper" / "a" / "b").symlink_to(tmp_path / "outside")  # a link as a directory inside the entry
    (src / "hardlinked").mkdir()  # a second name of a file outside the entry
    os.link(tmp_path / "outside" / "host-file", src / "hardlinked" / "kernel.cubin")
    deep = src / "deep"
    for _ in range(pool_copies.ENTRY_MAX_DEPTH + 1):
        deep = deep / "d"
    deep.mkdir(parents=True)
    (src / "many-dirs").mkdir()
    for i in range(pool_copies.ENTRY_MAX_ITEMS + 1):
        (src / "many-dirs" / str(i)).mkdir()
    monkeypatch.setattr(pool_copies, "ENTRY_MAX_BYTES", 1024)
    assert pool_copies.copy_entries(src, dest) == 1
    assert sorted(p.name for p in dest.iterdir()) == ["ok"]  # and no temporaries left
    assert (dest / "ok" / "sub" / "a.json").read_text() == "{}"
    assert (dest / "ok" / "sub" / "a.json").stat().st_nlink == 1  # copied, not linked
    assert pool_copies.copy_entries(src, dest) == 0  # there already
    for bad in ("../outside", "/etc", "a/b", "", ".", ".."):
        assert pool_copies.copy_entries(src, dest, [bad]) == 0
    (tmp_path / "outside" / "variant").mkdir()  # what a linked src would hand over, were it followed
    (tmp_path / "outside" / "variant" / "kernel.cubin").write_text("the host's")
    linked_src = tmp_path / "linked-src"
    linked_src.symlink_to(tmp_path / "outside")
    assert pool_copies.copy_entries(linked_src, tmp_path / "dest2") == 0


def test_a_killed_copys_staging_directory_goes_at_the_next_copy_and_a_live_ones_stays(tmp_path):
    # A judge killed mid-copy left `.staging-*` beside the content caches, with half-built entries in it: never
    # read, never removed. The next copy into that folder removes those untouched for STAGING_STALE_SECONDS.
    import time

    from judge.pool import copies as pool_copies

    kernels = tmp_path / "kernels"
    src, dest = tmp_path / "worker-cache", kernels / "abc"
    (src / "variant-1").mkdir(parents=True)
    (src / "variant-1" / "kernel.cubin").write_bytes(b"x")
    dest.mkdir(parents=True)
    old, live = kernels / ".staging-old", kernels / ".staging-live"
    for d in (old, live):
        (d / "variant-0").mkdir(parents=True)
    stale = time.time() - pool_copies.STAGING_STALE_SECONDS - 60
    os.utime(old, (stale, stale))
    assert pool_copies.copy_entries(src, dest) == 1 and (dest / "variant-1" / "kernel.cubin").read_bytes() == b"x"
    assert not old.exists() and live.exists()
    assert sorted(p.name for p in kernels.iterdir()) == [".staging-live", "abc"]  # its own staging: gone too


FILLS_THE_CACHE = """import os, time
# A file that uses its kernel cache, the one host directory its worker may write, to fill the host's disk:
# files of 1 MiB, one after another, for as long as it lives.
chunk = os.urandom(1 << 20)
for i in range(100000):
    with open(os.path.join(os.environ["TRITON_CACHE_DIR"], f"fill-{i}"), "wb") as f:
        f.write(chunk)
    time.sleep(0.01)


def add(x, y):
    return x
"""


@pytest.mark.parametrize("pooled", [False, True], ids=["spawned", "pooled"])
@pytest.mark.parametrize("name", ["process", "bwrap", "docker"])
def test_a_worker_that_fills_its_kernel_cache_is_killed_and_ole(name, pooled, tmp_path, monkeypatch):
    """The cache is watched while the worker runs (judge.kernel_store.too_much, judge.channel): past
    JUDGE_SUBMISSION_CACHE_GB (4 GB by default; 8 MB here) the worker is killed, and the reason is the
    output limit's (OLE), not the host's disk."""
    import time

    from judge.channel import WorkerDied
    from judge.kernel_store import disk_bytes

    backend = _usable(name)
    monkeypatch.setenv("JUDGE_SUBMISSION_CACHE_GB", "0.008")
    settings.cache_clear()  # (read again: _usable may have read them)
    job = _job(tmp_path, FILLS_THE_CACHE)
    server = _warm_pool(backend, job, monkeypatch, 1, litters=False) if pooled else None
    try:
        channel = WorkerChannel(backend, job)
        try:
            assert channel.pooled == pooled
            with pytest.raises(WorkerDied) as died:
                channel.start(submission_entry="add", arity=2, threads=1)
            assert died.value.reason == "output" and "kernel cache" in died.value.detail, died.value.detail
            cache = getattr(channel.proc, "worker_cache", None) or job.cache
            left = disk_bytes(cache)
            time.sleep(0.5)
            assert disk_bytes(cache) == left > 8_000_000  # it wrote past the cap, and writes no more
        finally:
            channel.close()
    finally:
        if server is not None:
            server.close()


MAKES_EMPTY_FILES = """import os
# Empty files take no blocks, but each takes one of the file system's inodes: the host's run out instead.
for i in range(10000000):
    open(os.path.join(os.environ["TRITON_CACHE_DIR"], f"empty-{i}"), "w").close()


def add(x, y):
    return x
"""


@pytest.mark.parametrize("name", ["process", "bwrap"])
def test_a_worker_that_fills_its_kernel_cache_with_empty_files_is_killed_and_ole(name, tmp_path, monkeypatch):
    from judge import kernel_store
    from judge.channel import WorkerDied

    backend = _usable(name)
    monkeypatch.setattr(kernel_store, "SUBMISSION_MAX_ITEMS", 2000)
    job = _job(tmp_path, MAKES_EMPTY_FILES)
    channel = WorkerChannel(backend, job)
    try:
        with pytest.raises(WorkerDied) as died:
            channel.start(submission_entry="add", arity=2, threads=1)
        # (its bytes are far under the 4 GB cap: the count caught it)
        assert died.value.reason == "output" and "files and directories" in died.value.detail, died.value.detail
    finally:
        channel.close()


HIDES_WHAT_IT_WRITES = {
    # Removed while open: the blocks stay taken, and no walk of the directory sees them (a red-team helper
    # of 2026-12-06 held 1.5 GB so against a 50 MB limit, unkilled).
    "removed-while-open": """import os, time
d = os.environ["TRITON_CACHE_DIR"]
fd = os.open(os.path.join(d, "hidden"), os.O_CREAT | os.O_RDWR, 0o600)
os.unlink(os.path.join(d, "hidden"))
for _ in range(40):
    os.write(fd, os.urandom(1 << 20))
time.sleep(30)
""",
    # Past the path length the walk can name (17 levels of 250 characters): 400 MB there went unseen.
    "past-the-path-limit": """import os, time
fd = os.open(os.environ["TRITON_CACHE_DIR"], os.O_RDONLY | os.O_DIRECTORY)
for _ in range(17):
    os.mkdir("d" * 250, dir_fd=fd)
    inner = os.open("d" * 250, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
    os.close(fd)
    fd = inner
f = os.open("fill", os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=fd)
os.write(f, os.urandom(40 << 20))
time.sleep(30)
""",
}


@pytest.mark.parametrize("trick", sorted(HIDES_WHAT_IT_WRITES))
@pytest.mark.parametrize("name", ["process", "bwrap", "docker"])
def test_a_worker_that_hides_what_it_writes_in_its_cache_is_killed_all_the_same(name, trick, tmp_path, monkeypatch):
    """What a walk of the directory by name cannot see is counted another way (the worker's open files), or is
    itself the finding (a tree deeper than Triton's ever are): OLE either way."""
    from judge.channel import WorkerDied

    backend = _usable(name)
    monkeypatch.setenv("JUDGE_SUBMISSION_CACHE_GB", "0.02")
    settings.cache_clear()  # (read again: _usable may have read them)
    job = _job(tmp_path, HIDES_WHAT_IT_WRITES[trick] + "\n\ndef add(x, y):\n    return x\n")
    channel = WorkerChannel(backend, job)
    try:
        with pytest.raises(WorkerDied) as died:
            channel.start(submission_entry="add", arity=2, threads=1)
        assert died.value.reason == "output" and "kernel cache" in died.value.detail, died.value.detail
    finally:
        channel.close()
    from judge import kernel_store

    kernel_store.drop_if_oversized(job.cache)  # as a session's end does
    if trick == "past-the-path-limit":
        assert not job.cache.exists()  # the tree the walk could not name goes, by descriptor
    else:
        assert kernel_store.disk_usage(job.cache)[:2] == (0, 0)  # its hidden file went with the worker


PARKS_FILES_IN_A_SOCKET = """import array, os, socket, time
# Files with no name whose only holder is a Unix socket's queue (SCM_RIGHTS), in a loop of two sockets that
# hold each other: no process has them open, and the loop outlives the worker until the kernel collects it.
d = os.environ["TRITON_CACHE_DIR"]
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
def park(fd):
    a.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])
for _ in range(4):
    fd = os.open(d, os.O_TMPFILE | os.O_RDWR, 0o600)
    os.posix_fallocate(fd, 0, 250 << 20)
    park(fd)
    os.close(fd)
park(b.fileno())
park(a.fileno())
a.close()
b.close()


def add(x, y):
    return x
"""


@pytest.mark.parametrize("name", ["process", "bwrap"])
def test_files_parked_in_a_socket_queue_are_freed_when_the_worker_ends(name, tmp_path):
    """While the worker lives the watch cannot see them (README, Sandboxes); once it has ended the judge has
    the kernel collect the queue (judge.kernel_store.collect_socket_garbage), so nothing stays on the disk."""
    backend = _usable(name)
    job = _job(tmp_path, PARKS_FILES_IN_A_SOCKET)

    def used() -> int:
        st = os.statvfs(tmp_path)
        return (st.f_blocks - st.f_bfree) * st.f_frsize

    before = used()
    channel = WorkerChannel(backend, job)
    try:
        assert channel.start(submission_entry="add", arity=2, threads=1).ok
        held = used() - before
    finally:
        channel.close()
    # The parked files took their gigabyte (else this test shows nothing); the file system is shared with the
    # rest of the suite, hence the margins.
    assert held > 600 << 20, held
    import time

    deadline = time.monotonic() + 10  # (the kernel collects in a work queue of its own, soon after)
    while (left := used() - before) > held - (500 << 20) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert left < held - (500 << 20), (held, left)  # without the collector they stayed 30 s and more
