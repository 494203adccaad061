"""One compile per kernel variant across a submission's workers.

A submission's correctness cases run on several workers at once (judge.session's lanes), and the cases
next to each other in a group often need the same kernel variant (the same constexprs, dtypes and
divisibility of the integer arguments). Each worker that meets a variant first would compile it, at
the same moment as the others: Triton's on-disk cache (TRITON_CACHE_DIR, shared by the submission's
workers: judge.intake.kernel_cache, one directory per submission content) only helps the workers that
come *after* the first one has finished.

So a worker takes a file lock named after the variant before it compiles. The first compiles; the
others wait for it, and their compile then finds the variant in the on-disk cache and only loads it.
The lock lives in the submission's own cache directory: only that submission's workers share it, so
one submission cannot make another wait. It is a matter of speed alone, never of trust: a worker that
ignores it, or cannot take it, compiles for itself as before. The kernel drops a flock when its
process ends, however it ends, so a worker killed mid-compile leaves nothing locked.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os

LOCK_DIR = "judge-compile-locks"


def _cache_dir() -> str | None:
    try:
        from triton import knobs

        path = knobs.cache.dir
    except Exception:  # an older Triton: the environment variable is what it reads
        path = os.environ.get("TRITON_CACHE_DIR")
    return path or None


def variant_name(jit_fn, args: tuple, kwargs: dict) -> str | None:
    """A file name for the variant JITFunction._do_compile(key, signature, device, ...) is asked for:
    the kernel's source hash (with its helpers'), the specialization key and the device. None where this
    Triton's call does not look like that (no lock then)."""
    key = args[0] if args else kwargs.get("key")
    device = args[2] if len(args) > 2 else kwargs.get("device")
    if key is None:
        return None
    try:
        source = jit_fn.cache_key
    except Exception:
        return None
    text = f"{source}\0{key!r}\0{device!r}"
    return hashlib.sha256(text.encode()).hexdigest()[:40]


@contextlib.contextmanager
def held(jit_fn, args: tuple, kwargs: dict):
    """Hold the variant's lock around a compile (a no-op where there is no cache directory to hold it in)."""
    base = _cache_dir()
    name = variant_name(jit_fn, args, kwargs) if base else None
    fd = None
    if name is not None:
        try:
            os.makedirs(os.path.join(base, LOCK_DIR), exist_ok=True)
            fd = os.open(os.path.join(base, LOCK_DIR, name), os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:  # a read-only or full cache: compile without it
            if fd is not None:
                os.close(fd)
            fd = None
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)  # closing the descriptor drops the flock
