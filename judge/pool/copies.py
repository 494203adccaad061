"""Copies of kernel-cache entries between a worker's cache and another (a content's cache, a pooled worker's own,
judge.driver_modules' trusted ones), safe against a worker that changes its cache while it is read."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import time
from pathlib import Path

from judge.untrusted.compile_lock import LOCK_DIR

ENTRY_MAX_BYTES = 256 << 20  # a kernel variant's files (cubin, PTX, IR, metadata) are a few MiB at most
ENTRY_MAX_ITEMS = 64  # its files and directories
ENTRY_MAX_DEPTH = 4  # Triton's entries are flat: one directory of files
# What one copy_entries call copies at most, in entries and in bytes: 98's reference compiles about 550
# variants of a few hundred KiB each. A worker that filled its cache with thousands of entries of the
# largest size an entry may have would otherwise have the judge copy every one of them into the content's
# cache when it closed (PooledProc.close), and again into each
# next worker's.
COPY_MAX_ENTRIES = 4096
COPY_MAX_BYTES = 8 << 30
SPARSE_SLACK = 64 << 10  # a file may have this many bytes fewer on disk than its size (a tail, a hole) and be copied
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK  # (a FIFO put in a file's place never blocks us)


def entry_names(src: Path) -> list[str]:
    """The kernel-cache entries of ``src`` (Triton: one directory per kernel variant), leaving out names
    that are not whole entries: hidden temporaries (ours), Triton's own ``tmp.pid_*`` and the compile
    locks (judge.untrusted.compile_lock)."""
    try:
        names = os.listdir(src)
    except OSError:
        return []
    return [n for n in names if not n.startswith((".", "tmp.")) and n != LOCK_DIR]


STAGING_STALE_SECONDS = 600.0  # a staging directory untouched this long is a killed copy's (a copy takes seconds)


def sweep_staging(parent: Path, min_age: float = STAGING_STALE_SECONDS) -> list[Path]:
    """Remove the staging directories in ``parent`` (:func:`copy_entries`'s) that nothing has written for
    ``min_age`` seconds: a judge killed in the middle of a copy left its half-built entries there, never read
    (no entry name starts with a dot) and never removed. The ones it removed."""
    removed = []
    try:
        found = [p for p in parent.iterdir() if p.name.startswith(".staging-")]
    except OSError:
        return removed
    now = time.time()
    for path in found:
        try:
            st = path.lstat()
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and now - st.st_mtime >= min_age:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def copy_entries(src: Path, dest: Path, names: list[str] | None = None) -> int:
    """Kernel-cache entries of ``src`` (``names``, default all) that ``dest`` lacks, each copied whole
    under a temporary name and then renamed, so a reader never sees half of one. How many it copied.

    A worker writes its cache, and may still be changing it while this reads: ``src`` and every directory
    below it are opened without following links, and only regular files with no other name (a hard link
    could name a file of the host's) are taken, their bytes copied (never linked: a linked file would stay
    the worker's to rewrite after it was checked), at most ENTRY_MAX_ITEMS files and directories of
    ENTRY_MAX_BYTES in all, ENTRY_MAX_DEPTH deep. An entry with anything else in it (a link, a FIFO, a
    device), or that changes under the walk, is left out whole; the others are copied still. So nothing
    outside the worker's cache is ever read (a black-box attack on the first version: a hard
    link and a linked ``src`` brought a host file in, deep nesting raised).

    ``dest`` may be mounted into a live worker too (a sibling's cache, a content cache): so each entry is
    built in a staging directory beside ``dest`` (its parent, which no sandbox mounts) and moved in by one
    rename, which replaces nothing (a name already there is skipped) and never follows a link the worker
    put in its way. Built inside ``dest`` (the first version), the worker could swap the half-built entry
    for a link to any host directory and have the rest written there, as the judge (a red team did, under
    bwrap: a trusted cache's module replaced by its own bytes).

    At most COPY_MAX_ENTRIES entries and COPY_MAX_BYTES bytes in one call: the rest is left where it is (a
    kernel not copied is compiled again where it is needed)."""
    try:
        root = os.open(src, _DIR_FLAGS)
    except OSError:
        return 0
    copied = 0
    total = 0  # bytes copied so far
    staging = None
    try:
        for name in entry_names(src) if names is None else names:
            if copied >= COPY_MAX_ENTRIES or total >= COPY_MAX_BYTES:
                break
            target = dest / name
            if "/" in name or "\0" in name or name in ("", ".", "..") or os.path.lexists(target):
                continue
            try:
                fd = os.open(name, _DIR_FLAGS, dir_fd=root)
            except (OSError, ValueError):
                continue  # gone, or not a directory (a link included)
            done = False
            tmp = None
            try:
                if staging is None:
                    sweep_staging(dest.parent)
                    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=dest.parent))
                tmp = staging / name
                tmp.mkdir()
                budget = {"items": 0, "bytes": 0}
                if _copy_tree(fd, tmp, budget, 1):
                    # renameat2(RENAME_NOREPLACE) is not in Python: a directory renamed onto an existing
                    # non-empty directory or onto a non-directory fails, and the lexists check above
                    # leaves an empty one only to a race, where either copy is the same bytes.
                    os.rename(tmp, target)
                    done = True
                    copied += 1
                    total += budget["bytes"]
            except OSError:  # a sibling copied it first (the rename finds it there), or the disk is full
                pass
            finally:
                os.close(fd)
                if not done and tmp is not None:
                    shutil.rmtree(tmp, ignore_errors=True)
    finally:
        os.close(root)
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    return copied


def _copy_tree(src_fd: int, dest: Path, budget: dict, depth: int) -> bool:
    """Copy the directory open at ``src_fd`` into ``dest`` (made); False where it holds anything but
    directories and regular files of one name each, or goes past the budget or the depth."""
    if depth > ENTRY_MAX_DEPTH:
        return False
    for name in os.listdir(src_fd):
        st = os.stat(name, dir_fd=src_fd, follow_symlinks=False)
        budget["items"] += 1
        if budget["items"] > ENTRY_MAX_ITEMS:
            return False
        if stat.S_ISDIR(st.st_mode):
            fd = os.open(name, _DIR_FLAGS, dir_fd=src_fd)
            try:
                (dest / name).mkdir()
                if not _copy_tree(fd, dest / name, budget, depth + 1):
                    return False
            finally:
                os.close(fd)
        elif not (stat.S_ISREG(st.st_mode) and st.st_nlink == 1 and _copy_file(src_fd, name, st, dest / name, budget)):
            return False
    return True


def _copy_file(src_fd: int, name: str, seen, dest: Path, budget: dict) -> bool:
    """The bytes of the regular file ``name`` (the one lstat saw: ``seen``) into ``dest``, within the budget.

    Not a sparse one (fewer blocks on disk than its size needs, past SPARSE_SLACK): Triton writes none, and a
    worker's sparse files cost it no disk where their copies would cost the host theirs in full, in every
    sibling's cache (a red team made 8 entries of no disk into gigabytes of copies). A file system that
    compresses may make an honest file look sparse: it is then compiled again, not copied."""
    fd = os.open(name, _FILE_FLAGS, dir_fd=src_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (seen.st_dev, seen.st_ino) or st.st_nlink != 1:
            return False
        if st.st_blocks * 512 + SPARSE_SLACK < st.st_size:
            return False
        left = ENTRY_MAX_BYTES - budget["bytes"]
        with open(dest, "wb") as w:
            while True:
                chunk = os.read(fd, min(1 << 20, left + 1))
                if not chunk:
                    break
                left -= len(chunk)
                if left < 0:
                    return False
                w.write(chunk)
        budget["bytes"] = ENTRY_MAX_BYTES - left
        return True
    finally:
        os.close(fd)
