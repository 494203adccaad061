"""Triton's C modules for a new submission's kernel cache, copied from the judge's own caches.

Triton 3.6 builds two kinds of C module with the host's C compiler, on a kernel's first launch in a process,
into the kernel cache it uses, and loads them from there ever after: ``cuda_utils`` (one source per Triton
version) and a ``__triton_launcher`` per launcher source (made from the kernel's argument types and
constants). A submission's cache is its content's own (judge.intake.kernel_cache), so every new file starts
with neither, and each of its workers builds them at its first launch, which made each lane's first
compiling case several times slower than the later ones. This module builds them once per driver version and
copies them into each new cache (docs/measurements: worker starts).

The speed run's trusted workers (the problem's reference, the PyTorch baseline) run the judge's own files
and keep their caches under the judge's cache root (``workers/<problem>-<name>/triton-cache``), which no
sandbox mounts. When a submission's cache is made, their entries of these modules, and nothing else of
theirs, are copied into it (judge.pool.copies.copy_entries: regular files only, bounded, each entry built outside
the destination and moved in). Nothing ever goes the other way. The ``process`` backend isolates nothing: a
file judged with it can write the cache root as the judge can, these caches included, so a cache root
shared with it serves no sandboxed judging. A copied module that does not load is built again by Triton, as
without it.
"""

from __future__ import annotations

import os
from pathlib import Path

MODULES = ("cuda_utils.", "__triton_launcher.")  # file names of the modules' entries (name + suffix)


def _only_modules(entry: Path) -> bool:
    """Whether the cache entry ``entry`` holds one or more of the modules' shared objects and nothing else."""
    try:
        names = os.listdir(entry)
    except OSError:
        return False
    return bool(names) and all(n.startswith(MODULES) and n.endswith(".so") for n in names)


def trusted_caches(root: Path) -> list[Path]:
    """The kernel caches of the judge's trusted workers under the cache root ``root``."""
    workers = root / "workers"
    try:
        return sorted(p / "triton-cache" for p in workers.iterdir() if (p / "triton-cache").is_dir())
    except OSError:
        return []


def seed(cache: Path, root: Path | None = None) -> int:
    """Copy the trusted caches' module entries into the submission cache ``cache``; how many were copied."""
    from judge.pool.copies import copy_entries, entry_names

    if root is None:
        from judge.timing.ceilings import cache_dir

        root = cache_dir()
    copied = 0
    for src in trusted_caches(root):
        names = [n for n in entry_names(src) if _only_modules(src / n)]
        if names:
            copied += copy_entries(src, cache, names)
    return copied
