"""A new submission's kernel cache gets Triton's C modules (cuda_utils, the launchers) from the judge's trusted
workers' caches, and nothing else of theirs (judge.driver_modules)."""

import os

from judge import driver_modules
from judge.sandbox.base import make_cache

SUFFIX = ".cpython-312-x86_64-linux-gnu.so"


def _limits():
    from judge.sandbox import Limits

    return Limits(
        case_seconds=60, run_seconds=600, memory_mb=4096, output_bytes=1 << 20, processes=256, startup_seconds=60
    )


def _trusted(root):
    cache = root / "workers" / "094-softmax-reference" / "triton-cache"
    entries = {
        "utils": {"cuda_utils" + SUFFIX: b"utils"},
        "launcher": {"__triton_launcher" + SUFFIX: b"launcher"},
        "kernel": {"softmax.cubin": b"cubin", "softmax.json": b"{}", "__grp__softmax.json": b"{}"},
        "mixed": {"cuda_utils" + SUFFIX: b"x", "notes.txt": b"y"},
        "empty": {},
    }
    for name, files in entries.items():
        (cache / name).mkdir(parents=True)
        for f, data in files.items():
            (cache / name / f).write_bytes(data)
    os.symlink("/etc/passwd", cache / "linked")
    (cache / "linked_entry").mkdir()
    os.symlink("/etc/passwd", cache / "linked_entry" / ("cuda_utils" + SUFFIX))
    return cache


def _tree(path):
    return sorted(
        (str(p.relative_to(path)), p.read_bytes() if p.is_file() and not p.is_symlink() else None)
        for p in path.rglob("*")
    )


def test_only_the_modules_entries_are_copied(tmp_path):
    root = tmp_path / "root"
    trusted = _trusted(root)
    before = _tree(root)
    cache = tmp_path / "kernels" / "abc"
    cache.mkdir(parents=True)
    assert driver_modules.seed(cache, root) == 2
    assert sorted(os.listdir(cache)) == ["launcher", "utils"]
    assert (cache / "utils" / ("cuda_utils" + SUFFIX)).read_bytes() == b"utils"
    assert (cache / "launcher" / ("__triton_launcher" + SUFFIX)).read_bytes() == b"launcher"
    assert not (cache / "utils" / ("cuda_utils" + SUFFIX)).is_symlink()
    assert _tree(root) == before  # the trusted caches are only read
    assert trusted.is_dir()


def test_a_new_cache_is_seeded_and_an_old_one_or_the_interpreters_is_not(tmp_path, monkeypatch):
    root = tmp_path / "root"
    _trusted(root)
    monkeypatch.setenv("JUDGE_CACHE_DIR", str(root))
    new = tmp_path / "kernels" / "new"
    make_cache(new, interpret=False)
    assert sorted(os.listdir(new)) == ["launcher", "utils"]

    old = tmp_path / "kernels" / "old"
    old.mkdir(parents=True)
    make_cache(old, interpret=False)
    assert os.listdir(old) == []

    interp = tmp_path / "kernels" / "interp"
    make_cache(interp, interpret=True)
    assert os.listdir(interp) == []


def test_without_trusted_caches_nothing_happens(tmp_path):
    cache = tmp_path / "c"
    cache.mkdir()
    assert driver_modules.seed(cache, tmp_path / "nowhere") == 0
    assert os.listdir(cache) == []


def test_the_head_starts_shared_cache_is_seeded_too(tmp_path, monkeypatch):
    # judge.pool.head_start makes the file's cache before any worker is spawned (warm(own_cache=True)).
    from judge.pool import server as pool_server
    from judge.sandbox import Job, get_backend

    root = tmp_path / "root"
    _trusted(root)
    monkeypatch.setenv("JUDGE_CACHE_DIR", str(root))
    cache = tmp_path / "kernels" / "file"
    job = Job(
        submission=tmp_path / "a.py", scratch=tmp_path, device="cuda", interpret=False, limits=_limits(), cache=cache
    )
    srv = pool_server.PoolServer(size=2)
    try:
        assert srv.warm(get_backend("process"), job, n=0, own_cache=True)
        assert sorted(os.listdir(cache)) == ["launcher", "utils"]
    finally:
        srv.close()


def test_dockers_caches_are_not_seeded(tmp_path, monkeypatch):
    # docker's worker is another user: Triton could not write beside the judge's copies (prepare_cache's uid).
    from judge.sandbox import Job
    from judge.sandbox.base import prepare_cache

    root = tmp_path / "root"
    _trusted(root)
    monkeypatch.setenv("JUDGE_CACHE_DIR", str(root))
    limits = _limits()
    job = Job(
        submission=tmp_path / "a.py",
        scratch=tmp_path,
        device="cuda",
        interpret=False,
        limits=limits,
        cache=tmp_path / "kernels" / "docker",
    )
    prepare_cache(job, uid=os.geteuid())
    assert os.listdir(job.cache) == []
    bwrap_job = Job(
        submission=tmp_path / "a.py",
        scratch=tmp_path,
        device="cuda",
        interpret=False,
        limits=limits,
        cache=tmp_path / "kernels" / "bwrap",
    )
    prepare_cache(bwrap_job)
    assert sorted(os.listdir(bwrap_job.cache)) == ["launcher", "utils"]
