"""The content caches of compiled kernels stay within the disk's budget (judge.kernel_store), on a real file
system: the oldest used go first, a recently used one never, a content and its replay's together."""

import os
import time
from pathlib import Path

from judge import kernel_store
from judge.sandbox.base import Job, Limits, prepare_cache
from judge.settings import settings

HOUR = 3600.0


def _content(root: Path, digest: str, kib: int, used: float, replay_kib: int = 0) -> list[Path]:
    """A content cache of ``kib`` KiB (Triton's layout: one directory per kernel variant), last used at
    ``used``; with its replay's beside it where ``replay_kib``."""
    made = []
    for name, size in ((digest, kib), (digest + "-replay", replay_kib)):
        if not size:
            continue
        entry = root / name / "K3Y"
        entry.mkdir(parents=True)
        (entry / "kernel.cubin").write_bytes(os.urandom(size << 10))
        os.utime(root / name, (used, used))
        made.append(root / name)
    return made


def test_the_oldest_used_go_first_until_the_rest_fits(tmp_path):
    now = time.time()
    old = _content(tmp_path, "a" * 40, 64, now - 5 * HOUR, replay_kib=64)
    middle = _content(tmp_path, "b" * 40, 64, now - 3 * HOUR)
    new = _content(tmp_path, "c" * 40, 64, now - 2 * HOUR)
    (tmp_path / "not-a-cache").mkdir()  # other names are left alone
    result = kernel_store.prune(tmp_path, keep=100 << 10, now=now)  # (each directory takes a block too)
    assert result["dropped"] == 2 and result["kept"] == 1
    assert not any(p.exists() for p in old + middle)  # the content and its replay's went together
    assert all(p.exists() for p in new) and (tmp_path / "not-a-cache").is_dir()
    assert result["left"] <= 100 << 10 and result["freed"] >= 192 << 10
    assert not [n for n in os.listdir(tmp_path) if n.startswith(kernel_store.TRASH)]


def test_a_cache_used_in_the_last_hour_stays_even_over_the_budget(tmp_path):
    now = time.time()
    recent = _content(tmp_path, "d" * 40, 64, now - 60)
    result = kernel_store.prune(tmp_path, keep=0, now=now)
    assert result["dropped"] == 0 and all(p.exists() for p in recent)
    assert kernel_store.prune(tmp_path, keep=0, now=now + 2 * HOUR)["dropped"] == 1
    assert not recent[0].exists()


def test_pruning_is_at_most_every_ten_minutes_and_clears_what_a_killed_one_left(tmp_path):
    now = time.time()
    _content(tmp_path, "e" * 40, 64, now - 5 * HOUR)
    (tmp_path / f"{kernel_store.TRASH}{'f' * 40}-1-2" / "K3Y").mkdir(parents=True)
    assert kernel_store.maybe_prune(tmp_path, keep=0, now=now)["dropped"] == 1
    assert not (tmp_path / f"{kernel_store.TRASH}{'f' * 40}-1-2").exists()
    _content(tmp_path, "9" * 40, 64, now - 5 * HOUR)
    assert kernel_store.maybe_prune(tmp_path, keep=0, now=now + 60) is None  # pruned a minute ago
    assert (tmp_path / ("9" * 40)).exists()
    assert kernel_store.maybe_prune(tmp_path, keep=0, now=now + 700)["dropped"] == 1


def test_a_file_whose_cache_grew_past_the_cap_loses_it_at_its_end(tmp_path, monkeypatch):
    small = _content(tmp_path, "1" * 40, 64, time.time())
    big = _content(tmp_path, "2" * 40, 256, time.time(), replay_kib=64)
    assert kernel_store.drop_if_oversized(small[0], limit=200 << 10) == 0 and small[0].exists()
    assert kernel_store.drop_if_oversized(big[0], limit=200 << 10) >= 320 << 10
    assert not any(p.exists() for p in big)
    assert kernel_store.drop_if_oversized(None) == 0
    many = tmp_path / ("6" * 40)
    many.mkdir()
    for i in range(30):
        (many / f"empty-{i}").touch()  # no blocks, but inodes
    monkeypatch.setattr(kernel_store, "SUBMISSION_MAX_ITEMS", 20)
    kernel_store.drop_if_oversized(many, limit=200 << 10)
    assert not many.exists()


def test_a_sparse_file_counts_what_it_takes_on_disk(tmp_path):
    with open(tmp_path / "hole", "wb") as f:
        f.truncate(1 << 30)  # 1 GiB long, no blocks
    assert kernel_store.disk_bytes(tmp_path) < 1 << 20


def test_the_budget_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("JUDGE_KERNEL_CACHE_GB", "2.5")
    assert kernel_store.keep_bytes() == 2_500_000_000
    monkeypatch.setenv("JUDGE_KERNEL_CACHE_GB", "lots")
    settings.cache_clear()  # (the settings are read once: read them again)
    assert kernel_store.keep_bytes() == int(kernel_store.KEEP_GB * 1e9)


def test_starting_a_worker_marks_its_content_cache_used(tmp_path):
    cache = tmp_path / "kernels" / ("3" * 40)
    cache.mkdir(parents=True)
    os.utime(cache, (time.time() - 5 * HOUR,) * 2)
    job = Job(
        submission=tmp_path / "s.py",
        scratch=tmp_path,
        device="cuda",
        interpret=False,
        limits=Limits(case_seconds=1, run_seconds=1, memory_mb=1, output_bytes=1, processes=1),
        gpu=0,
        cache=cache,
    )
    prepare_cache(job)
    assert time.time() - cache.stat().st_mtime < 60
    assert kernel_store.prune(cache.parent, keep=0)["dropped"] == 0


def test_a_session_marks_its_own_cache_used_before_it_prunes_the_others(tmp_path, monkeypatch):
    now = time.time()
    own = _content(tmp_path, "4" * 40, 64, now - 5 * HOUR)[0]  # used hours ago, judged again now
    other = _content(tmp_path, "5" * 40, 64, now - 5 * HOUR)[0]
    monkeypatch.setenv("JUDGE_KERNEL_CACHE_GB", "0")
    kernel_store.prune_in_background(own).join(timeout=30)
    assert own.exists() and not other.exists()
    assert kernel_store.prune_in_background(None) is None  # the interpreter: no cache, nothing to prune


def test_a_file_of_many_hard_links_counts_once(tmp_path):
    (tmp_path / "one").write_bytes(os.urandom(256 << 10))
    for i in range(20):
        os.link(tmp_path / "one", tmp_path / f"link-{i}")
    assert kernel_store.disk_bytes(tmp_path) < 300 << 10


def test_a_tree_deeper_than_tritons_is_itself_the_finding(tmp_path):
    deep = tmp_path
    for _ in range(kernel_store.MAX_DEPTH + 2):
        deep = deep / "d"
    deep.mkdir(parents=True)
    assert "levels deep" in kernel_store.disk_usage(tmp_path)[2]
    assert kernel_store.disk_usage(tmp_path / "d" / "d")[2] is None  # (within the depth from there)
