"""A pooled worker's kind (the key every worker of the pool is filed under) and the pool socket's messages."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from judge.sandbox.base import Job, Limits

MAX_MESSAGE = 1 << 16


def key_of(backend, job: Job) -> dict | None:
    """What a pooled worker must share with ``job`` to serve it: everything fixed when it is spawned. None for
    a backend the pool cannot rebuild (one not in judge.sandbox.BACKENDS, e.g. a test's fake)."""
    from judge.sandbox import BACKENDS, backend_class

    name = getattr(backend, "name", None)
    if name not in BACKENDS or not isinstance(backend, backend_class(name)):
        return None
    lim = job.limits
    key = {
        "backend": name,
        "module": job.module,
        "device": job.device,
        "gpu": job.gpu,
        "interpret": bool(job.interpret),
        "memory_mb": lim.memory_mb,
        "processes": lim.processes,
        "scratch_mb": lim.scratch_mb,
        "gpu_memory_mb": lim.gpu_memory_mb,
        "cache": job.cache is not None,
    }
    key["args"] = backend.rebuild_args(job.device)
    return key


def key_text(key: dict) -> str:
    return json.dumps(key, sort_keys=True)


def backend_class_of(key: dict):
    """The backend class ``key`` names (None: none of that name is registered)."""
    from judge.sandbox import BACKENDS, backend_class

    return backend_class(key["backend"]) if key.get("backend") in BACKENDS else None


def backend_for(key: dict):
    return backend_class_of(key)(**key["args"])


def template(key: dict, scratch: Path, cache: Path | None) -> Job:
    """The job a pooled worker is spawned for: no submission; the limits that the sandbox fixes at spawn (the
    others are the judge's own, applied from outside when the worker is used)."""
    limits = Limits(
        case_seconds=0.0,
        run_seconds=0.0,
        memory_mb=key["memory_mb"],
        output_bytes=0,
        processes=key["processes"],
        scratch_mb=key["scratch_mb"],
        gpu_memory_mb=key["gpu_memory_mb"],
    )
    return Job(
        submission=None,
        scratch=scratch,
        device=key["device"],
        interpret=key["interpret"],
        limits=limits,
        gpu=key["gpu"],
        module=key["module"],
        cache=cache,
    )


def recv(conn: socket.socket) -> dict | None:
    data = conn.recv(MAX_MESSAGE)
    if not data:
        return None
    return json.loads(data)
