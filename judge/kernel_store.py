"""How much disk the compiled kernels may keep: the content caches pruned, oldest use first.

Each submission's kernels are kept in a directory of its content's own (judge.intake.kernel_cache:
``<cache root>/kernels/<digest>``, and ``<digest>-replay`` for its replay worker), so that its workers, its
speed run and a re-submission of the same bytes compile each variant once. Nothing removed them: every new
file of a roster left its directory behind. On a GPU host judging a course (hundreds of students, six
problems, each edit a new file of hundreds of kernel variants: docs/measurements, the kernel cache)
they would fill its disk in time.

So the judge keeps them within ``JUDGE_KERNEL_CACHE_GB`` (default :data:`KEEP_GB`), dropping the
directories used longest ago, never one used in the last :data:`IDLE_SECONDS` (a session that runs now
touches its own when it starts its workers: judge.sandbox.base.prepare_cache). A dropped directory costs
only compiles, if the same bytes come again. The judge does it at most every :data:`PRUNE_EVERY_SECONDS`
per cache root (a stamp file), in the background of a GPU session, one process at a time (a lock file);
nothing here raises.

A worker's cache is the one host directory it may write (each file capped by RLIMIT_FSIZE, their number not):
a file could fill the host's disk, or its inodes, through it. So the judge measures it while the worker runs
(:func:`too_much`, every WATCH_EVERY_SECONDS, judge.channel's watchdog) and kills a worker whose cache holds
more than ``JUDGE_SUBMISSION_CACHE_GB`` (default :data:`SUBMISSION_MAX_GB`) or more than
:data:`SUBMISSION_MAX_ITEMS` files and directories: OLE. 98's reference compiles about 550 variants of a few
hundred KiB each (judge.pool.copies.COPY_MAX_ENTRIES), far under it. A content's directories past it when its session
ends are dropped then. A walk by name does not see everything: files removed while open (or made with
O_TMPFILE) are counted from the worker's processes' open files and mappings (:func:`unnamed_bytes`), and a
tree deeper than MAX_DEPTH, or a directory the judge cannot read, is itself the finding (a red-team file held
gigabytes in removed files, and hundreds of megabytes in a tree past the path limit, against a 50 MB limit,
before these: docs/measurements, the kernel cache). Not seen while the worker lives: a file whose only holder
is a Unix socket's queue (:func:`collect_socket_garbage` frees it once the worker has ended).
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import socket
import stat
import subprocess
import threading
import time
from pathlib import Path

from judge.settings import Settings

KEEP_GB = Settings.kernel_cache_gb  # the content caches' total on disk, by default (JUDGE_KERNEL_CACHE_GB)
IDLE_SECONDS = 3600.0  # a directory used more recently than this is never pruned (a session runs for minutes)
PRUNE_EVERY_SECONDS = 600.0  # at most one pruning per cache root in this time
# A worker's cache past this: killed (OLE); a content's past it: dropped at its end (JUDGE_SUBMISSION_CACHE_GB).
SUBMISSION_MAX_GB = Settings.submission_cache_gb
SUBMISSION_MAX_ITEMS = 200_000  # its files and directories: 98's reference makes about 4,000 (550 variants)
WATCH_EVERY_SECONDS = 1.0  # how often a running worker's cache is measured: a walk of 98's takes milliseconds

_NAME = re.compile(r"^([0-9a-f]{40})(-replay)?$")  # judge.intake.kernel_cache's names, and the replay's
STAMP = ".pruned"
LOCK = ".prune.lock"
TRASH = ".trash-"


def submission_max_bytes() -> int:
    """What one worker's kernel cache may take on disk (judge.settings: JUDGE_SUBMISSION_CACHE_GB, else
    SUBMISSION_MAX_GB)."""
    from judge.settings import settings

    return int(settings().submission_cache_gb * 1e9)


def keep_bytes() -> int:
    """The budget (judge.settings: JUDGE_KERNEL_CACHE_GB, a number of GB, 0 keeps only what was used in the last
    hour; else KEEP_GB)."""
    from judge.settings import settings

    return int(settings().kernel_cache_gb * 1e9)


MAX_DEPTH = 8  # directory levels below a cache: Triton's entries are one (judge.pool.copies.ENTRY_MAX_DEPTH: 4)


def disk_usage(path: Path, stop_items: int | None = None) -> tuple[int, int, str | None]:
    """(bytes, items, trouble): the blocks a directory's files take on disk (a sparse file counts what it
    uses, a file of several hard links once) and how many files and directories it holds, links not
    followed; trouble says why the walk could not see all of it: a directory deeper than MAX_DEPTH (a path
    past the system's limit cannot be walked by name), or one it could not read. (0, 0, None) where ``path``
    itself is gone. The walk stops once it has counted more than ``stop_items``."""
    total = items = 0
    inodes: set[int] = set()
    stack = [(str(path), 0)]
    while stack:
        top, depth = stack.pop()
        try:
            with os.scandir(top) as it:
                for entry in it:
                    items += 1
                    if stop_items is not None and items > stop_items:
                        return total, items, None
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue  # removed meanwhile
                    except OSError as exc:
                        return total, items, f"a file it could not measure ({exc.strerror})"
                    if st.st_nlink > 1:
                        if st.st_ino in inodes:
                            continue
                        inodes.add(st.st_ino)
                    total += st.st_blocks * 512
                    if entry.is_dir(follow_symlinks=False):
                        if depth + 1 > MAX_DEPTH:
                            return total, items, f"directories more than {MAX_DEPTH} levels deep"
                        stack.append((entry.path, depth + 1))
        except (FileNotFoundError, NotADirectoryError):
            continue  # removed meanwhile
        except OSError as exc:
            return total, items, f"a directory it could not read ({exc.strerror})"
    return total, items, None


def disk_bytes(path: Path) -> int:
    """The bytes of :func:`disk_usage`."""
    return disk_usage(path)[0]


def unnamed_bytes(pids, dev: int) -> int:
    """What the processes ``pids`` hold on the file system ``dev`` in files that no longer have a name
    (removed while open, or made with O_TMPFILE, or mapped and then removed): blocks a directory's walk
    cannot see, taken until the last of them closes. Counted once per inode; a mapping the judge has no
    right to stat counts its length."""
    seen: set[int] = set()
    total = 0
    for pid in pids:
        base = f"/proc/{pid}"
        try:
            fds = os.listdir(f"{base}/fd")
        except OSError:
            fds = []
        for fd in fds:
            try:
                st = os.stat(f"{base}/fd/{fd}")
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and st.st_dev == dev and st.st_nlink == 0 and st.st_ino not in seen:
                seen.add(st.st_ino)
                total += st.st_blocks * 512
        try:
            with open(f"{base}/maps") as f:
                lines = [line for line in f if line.rstrip().endswith("(deleted)")]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            try:
                major, minor = (int(x, 16) for x in parts[3].split(":"))
                ino = int(parts[4])
            except (IndexError, ValueError):
                continue
            if os.makedev(major, minor) != dev or ino in seen:
                continue
            seen.add(ino)
            try:
                total += os.stat(f"{base}/map_files/{parts[0]}").st_blocks * 512
            except OSError:
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                total += hi - lo
    return total


def collect_socket_garbage() -> None:
    """Have the kernel free what dead processes left in Unix sockets' queues. A worker can pass a file's
    descriptor into a socket's queue (SCM_RIGHTS) and close its own: the file is then held by the queue alone,
    where neither a walk nor the worker's open files see it (a red-team file held gigabytes so,
    against a 50 MB limit), and a queue in a loop of sockets outlives the worker until the kernel's collector
    runs, which closing any Unix socket starts (one socketpair's close frees what such a worker left:
    docs/measurements, the kernel cache). Called when a worker with a kernel cache has ended. Never raises."""
    try:
        a, b = socket.socketpair()
        a.close()
        b.close()
    except OSError:
        pass


def device_of(cache: Path) -> int | None:
    """The file system ``cache`` is on (st_dev), or None where it cannot be seen."""
    try:
        return os.stat(cache).st_dev
    except OSError:
        return None


_walks: dict[str, tuple[float, int, int, str | None]] = {}  # directory -> (when, bytes, items, trouble)
_unnamed: dict[str, dict[object, int]] = {}  # directory -> {worker: bytes in its files without a name}
_watch_lock = threading.Lock()


def report_unnamed(cache: Path, worker: object, nbytes: int | None) -> None:
    """Say what ``worker`` holds in files without a name on ``cache``'s file system (:func:`unnamed_bytes`);
    None: the worker has ended, forget it."""
    with _watch_lock:
        held = _unnamed.setdefault(str(cache), {})
        if nbytes is None:
            held.pop(worker, None)
            if not held:
                del _unnamed[str(cache)]
        else:
            held[worker] = nbytes


def too_much(cache: Path) -> str | None:
    """Why ``cache`` and its workers' files without a name hold more than a worker may write (bytes past
    JUDGE_SUBMISSION_CACHE_GB; files and directories past SUBMISSION_MAX_ITEMS: empty files take no blocks
    but the file system's inodes; a tree its walk cannot see all of), else None. The directory is walked at
    most every WATCH_EVERY_SECONDS: the watchdogs of one content's workers (a dozen, at ten checks a second
    each) share one walk of it."""
    key = str(cache)
    now = time.monotonic()
    with _watch_lock:
        seen = _walks.get(key)
        fresh = seen is not None and now - seen[0] < WATCH_EVERY_SECONDS
        if not fresh:
            if len(_walks) > 4096:  # a service's long life: forget what no watchdog asked for a minute
                for k in [k for k, v in _walks.items() if now - v[0] > 60.0]:
                    del _walks[k]
            # This thread walks; the others read the last figures meanwhile.
            _walks[key] = (now, *(seen[1:] if seen else (0, 0, None)))
    if not fresh:
        size, items, trouble = disk_usage(cache, stop_items=SUBMISSION_MAX_ITEMS)
        with _watch_lock:
            _walks[key] = (time.monotonic(), size, items, trouble)
    with _watch_lock:
        _, size, items, trouble = _walks[key]
        unnamed = sum(_unnamed.get(key, {}).values())
    cap = submission_max_bytes()
    if trouble is not None:
        return f"made {trouble} in its kernel cache"
    if size + unnamed > cap:
        hidden = f", {unnamed / 1e9:.2f} GB of it in files without a name" if unnamed else ""
        return f"wrote {(size + unnamed) / 1e9:.2f} GB into its kernel cache{hidden}; the limit is {cap / 1e9:g} GB"
    if items > SUBMISSION_MAX_ITEMS:
        return f"made more than {SUBMISSION_MAX_ITEMS} files and directories in its kernel cache"
    return None


def _drop(path: Path) -> None:
    """Remove a directory: renamed aside first (one atomic step, so nothing ever finds half of it under its
    own name), then deleted; what shutil cannot remove (a tree deeper than Python's recursion, a directory
    its maker made unreadable) goes with chmod and rm, which walk by descriptor."""
    aside = path.with_name(f"{TRASH}{path.name}-{os.getpid()}-{threading.get_ident()}")
    try:
        os.rename(path, aside)
    except OSError:
        return
    _remove(aside)


def _remove(path: Path) -> None:
    try:
        shutil.rmtree(path, ignore_errors=True)
    except Exception:  # noqa: BLE001 - RecursionError on a deep tree
        pass
    if os.path.lexists(path):
        subprocess.run(["chmod", "-R", "u+rwx", str(path)], capture_output=True, timeout=600)
        subprocess.run(["rm", "-rf", "--one-file-system", str(path)], capture_output=True, timeout=600)


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
            _remove(path)
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
    ``limit`` bytes (SUBMISSION_MAX_GB), hold more than SUBMISSION_MAX_ITEMS files and directories, or
    cannot be walked whole (:func:`disk_usage`); the bytes counted, else 0. Never raises."""
    if cache is None:
        return 0
    limit = submission_max_bytes() if limit is None else limit
    try:
        paths = [p for p in (cache, cache.with_name(cache.name + "-replay")) if p.is_dir()]
        usage = [disk_usage(p) for p in paths]
        size = sum(b for b, _, _ in usage)
        if size <= limit and sum(n for _, n, _ in usage) <= SUBMISSION_MAX_ITEMS and not any(t for _, _, t in usage):
            return 0
        for path in paths:
            _drop(path)
        return size
    except Exception:  # noqa: BLE001 - a session's end must not fail on its cache
        return 0


def touch(cache: Path) -> None:
    """Mark a content cache used now (its workers are starting): pruning leaves it for IDLE_SECONDS."""
    try:
        os.utime(cache)
    except OSError:
        pass
