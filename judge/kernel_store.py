"""How much disk the compiled kernels may keep: the content caches pruned, oldest use first.

Each submission's kernels are kept in a directory of its content's own (judge.intake.kernel_cache:
``<cache root>/kernels/<digest>``, and ``<digest>-replay`` for its replay worker), so that its workers, its
speed run and a re-submission of the same bytes compile each variant once. Nothing removed them: every new
file of a roster left its directory behind. On a GPU host judging a course (hundreds of students, six
problems, each edit a new file; a flash-attention backward submission made about 500 compiles:
tests/gpu/RESULTS.md, 2026-12-06, tenth session) they would fill its disk in time (not seen yet: no roster
here ran long enough).

So the judge keeps them within ``JUDGE_KERNEL_CACHE_GB`` (default :data:`KEEP_GB`), dropping the
directories used longest ago, never one used in the last :data:`IDLE_SECONDS` (a session that runs now
touches its own when it starts its workers: judge.sandbox.base.prepare_cache). A dropped directory costs
only compiles, if the same bytes come again. The judge does it at most every :data:`PRUNE_EVERY_SECONDS`
per cache root (a stamp file), in the background of a GPU session, one process at a time (a lock file);
nothing here raises.

A worker's cache is the one host directory it may write (each file capped by RLIMIT_FSIZE, their number
not): a file could fill the host's disk, or its inodes, through it. So the judge measures it while the
worker runs (:func:`too_much`, every WATCH_EVERY_SECONDS, judge.channel's watchdog) and kills a worker whose
cache holds more than ``JUDGE_SUBMISSION_CACHE_GB`` (default :data:`SUBMISSION_MAX_GB`) or more than
:data:`SUBMISSION_MAX_ITEMS` files and directories: OLE. 98's reference compiles
about 550 variants of a few hundred KiB each (judge.pool.COPY_MAX_ENTRIES), far under it. A content's
directories past it when its session ends are dropped then. What the walk cannot see: a file the worker
removed while it keeps it open takes the disk until the worker ends, unmeasured.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import threading
import time
from pathlib import Path

KEEP_GB = 20.0  # the content caches' total on disk, by default (JUDGE_KERNEL_CACHE_GB)
IDLE_SECONDS = 3600.0  # a directory used more recently than this is never pruned (a session runs for minutes)
PRUNE_EVERY_SECONDS = 600.0  # at most one pruning per cache root in this time
SUBMISSION_MAX_GB = 4.0  # a worker's cache past this: killed (OLE); a content's past it: dropped at its end
SUBMISSION_MAX_ITEMS = 200_000  # its files and directories: 98's reference makes about 4,000 (550 variants)
WATCH_EVERY_SECONDS = 1.0  # how often a running worker's cache is measured: a walk of 98's (3,300 files) takes 16 ms

_NAME = re.compile(r"^([0-9a-f]{40})(-replay)?$")  # judge.intake.kernel_cache's names, and the replay's
STAMP = ".pruned"
LOCK = ".prune.lock"
TRASH = ".trash-"


def _gb(name: str, default: float) -> float:
    text = os.environ.get(name, "").strip()
    try:
        return max(0.0, float(text)) if text else default
    except ValueError:
        return default


def submission_max_bytes() -> int:
    """What one worker's kernel cache may take on disk: JUDGE_SUBMISSION_CACHE_GB, else SUBMISSION_MAX_GB."""
    return int(_gb("JUDGE_SUBMISSION_CACHE_GB", SUBMISSION_MAX_GB) * 1e9)


def keep_bytes() -> int:
    """The budget: JUDGE_KERNEL_CACHE_GB (a number of GB, 0 keeps only what was used in the last hour), else
    KEEP_GB."""
    return int(_gb("JUDGE_KERNEL_CACHE_GB", KEEP_GB) * 1e9)


def disk_usage(path: Path, stop_items: int | None = None) -> tuple[int, int]:
    """(bytes, items): the blocks a directory's files take on disk (a sparse file counts what it uses) and
    how many files and directories it holds, links not followed; (0, 0) where it cannot be read. The walk
    stops once it has counted more than ``stop_items``."""
    total = items = 0
    stack = [str(path)]
    while stack:
        top = stack.pop()
        try:
            with os.scandir(top) as it:
                for entry in it:
                    items += 1
                    if stop_items is not None and items > stop_items:
                        return total, items
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    total += st.st_blocks * 512
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
        except OSError:
            continue
    return total, items


def disk_bytes(path: Path) -> int:
    """The bytes of :func:`disk_usage`."""
    return disk_usage(path)[0]


_sizes: dict[str, tuple[float, str | None]] = {}  # directory -> (when measured, why it is too much): shared
_sizes_lock = threading.Lock()


def too_much(cache: Path) -> str | None:
    """Why ``cache`` holds more than a worker may write (bytes past JUDGE_SUBMISSION_CACHE_GB, or files and
    directories past SUBMISSION_MAX_ITEMS: empty files take no blocks but the file system's inodes), else None.
    Measured at most every WATCH_EVERY_SECONDS: the watchdogs of one content's workers (a dozen, at ten checks
    a second each) share one walk of it."""
    key = str(cache)
    now = time.monotonic()
    with _sizes_lock:
        seen = _sizes.get(key)
        if seen is not None and now - seen[0] < WATCH_EVERY_SECONDS:
            return seen[1]
        if len(_sizes) > 4096:  # a service's long life: forget what no watchdog asked for a minute
            for k in [k for k, (t, _) in _sizes.items() if now - t > 60.0]:
                del _sizes[k]
        _sizes[key] = (now, seen[1] if seen else None)  # this thread measures; the others read the last word
    cap = submission_max_bytes()
    size, items = disk_usage(cache, stop_items=SUBMISSION_MAX_ITEMS)
    why = None
    if size > cap:
        why = f"wrote {size / 1e9:.2f} GB into its kernel cache; the limit is {cap / 1e9:g} GB"
    elif items > SUBMISSION_MAX_ITEMS:
        why = f"made more than {SUBMISSION_MAX_ITEMS} files and directories in its kernel cache"
    with _sizes_lock:
        _sizes[key] = (time.monotonic(), why)
    return why


def _drop(path: Path) -> None:
    """Remove a directory: renamed aside first (one atomic step, so nothing ever finds half of it under its
    own name), then deleted."""
    aside = path.with_name(f"{TRASH}{path.name}-{os.getpid()}-{threading.get_ident()}")
    try:
        os.rename(path, aside)
    except OSError:
        return
    shutil.rmtree(aside, ignore_errors=True)


def prune(root: Path, keep: int, now: float | None = None, idle: float = IDLE_SECONDS) -> dict:
    """Drop content caches under ``root`` (``<cache root>/kernels``), oldest use first, until what is left
    takes at most ``keep`` bytes; a content's directory and its replay's go together, and none used in the
    last ``idle`` seconds goes. Also removes what an earlier pruning, killed, left aside. Returns
    {"kept": n, "dropped": n, "freed": bytes, "left": bytes}."""
    now = time.time() if now is None else now
    contents: dict[str, list] = {}  # digest -> [last use, bytes, paths]
    try:
        names = os.listdir(root)
    except OSError:
        return {"kept": 0, "dropped": 0, "freed": 0, "left": 0}
    for name in names:
        path = root / name
        if name.startswith(TRASH):
            shutil.rmtree(path, ignore_errors=True)
            continue
        m = _NAME.match(name)
        if not m:
            continue
        try:
            st = os.stat(path, follow_symlinks=False)
        except OSError:
            continue
        if not os.path.isdir(path) or os.path.islink(path):
            continue
        item = contents.setdefault(m.group(1), [0.0, 0, []])
        item[0] = max(item[0], st.st_mtime)
        item[1] += disk_bytes(path)
        item[2].append(path)
    left = sum(item[1] for item in contents.values())
    dropped = freed = 0
    for last, size, paths in sorted(contents.values(), key=lambda item: item[0]):
        if left <= keep:
            break
        if now - last < idle:
            break  # the rest are newer still
        for path in paths:
            _drop(path)
        dropped += 1
        freed += size
        left -= size
    return {"kept": len(contents) - dropped, "dropped": dropped, "freed": freed, "left": left}


def maybe_prune(root: Path, keep: int | None = None, now: float | None = None) -> dict | None:
    """:func:`prune` ``root``, unless it was pruned in the last PRUNE_EVERY_SECONDS or another process prunes
    it now (None then). Never raises."""
    now = time.time() if now is None else now
    try:
        stamp = root / STAMP
        try:
            if now - stamp.stat().st_mtime < PRUNE_EVERY_SECONDS:
                return None
        except FileNotFoundError:
            pass
        with open(root / LOCK, "a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return None
            stamp.touch()
            os.utime(stamp, (now, now))
            return prune(root, keep_bytes() if keep is None else keep, now)
    except OSError:
        return None


def prune_in_background(cache: Path | None) -> threading.Thread | None:
    """Mark ``cache`` (a session's content cache) used, and start :func:`maybe_prune` of the root that holds
    it in a daemon thread: a session does not wait for it. None where there is no cache (the interpreter
    compiles nothing)."""
    if cache is None:
        return None
    touch(cache)  # this session's own first (its pooled workers copy from it without touching it)
    thread = threading.Thread(target=maybe_prune, args=(cache.parent,), name="judge-kernel-prune", daemon=True)
    thread.start()
    return thread


def drop_if_oversized(cache: Path | None, limit: int | None = None) -> int:
    """At a session's end: drop ``cache`` and its replay's directory where together they take more than
    ``limit`` bytes (SUBMISSION_MAX_GB) or hold more than SUBMISSION_MAX_ITEMS files and directories; the
    bytes freed, else 0. Never raises."""
    if cache is None:
        return 0
    limit = submission_max_bytes() if limit is None else limit
    try:
        paths = [p for p in (cache, cache.with_name(cache.name + "-replay")) if p.is_dir()]
        usage = [disk_usage(p) for p in paths]
        size = sum(b for b, _ in usage)
        if size <= limit and sum(n for _, n in usage) <= SUBMISSION_MAX_ITEMS:
            return 0
        for path in paths:
            _drop(path)
        return size
    except OSError:
        return 0


def touch(cache: Path) -> None:
    """Mark a content cache used now (its workers are starting): pruning leaves it for IDLE_SECONDS."""
    try:
        os.utime(cache)
    except OSError:
        pass
