"""Sandbox backends, by name (``--sandbox``): a registry in the style of DMOJ's executors.

Each backend is one module with a :class:`~judge.sandbox.base.Backend`
subclass (``name``, ``summary``, its capabilities: ``base.CAPABILITIES``,
``unavailable()``, ``spawn()``); ``BACKENDS`` lists them, and everything else (the CLI's choices
and help, ``sandbox status``, ``auto``) is derived from it. Adding a backend
is one new file and one line here: see docs/design/extending.md.
"""

from __future__ import annotations

import importlib

from judge.sandbox.base import CAPABILITIES, Backend, Job, Limits, Proc  # noqa: F401

# name -> "module:class". ``auto`` takes the first isolated backend that is
# usable here, in this order, and the unisolated ones only as a last resort.
BACKENDS = {
    "docker": "judge.sandbox.docker_engine:DockerBackend",
    "bwrap": "judge.sandbox.bwrap:BwrapBackend",
    "process": "judge.sandbox.process:ProcessBackend",
}


def backend_names() -> list[str]:
    return ["auto", *BACKENDS]


def backend_class(name: str) -> type[Backend]:
    module, _, cls = BACKENDS[name].partition(":")
    found = getattr(importlib.import_module(module), cls)
    # A capability left to Backend's default would be one the backend silently goes without (no litters, no
    # yielding), or claims without having.
    missing = [c for c in CAPABILITIES if not any(c in vars(k) for k in found.__mro__ if k is not Backend)]
    if missing:
        raise TypeError(f"sandbox backend {name!r} ({BACKENDS[name]}) does not declare {', '.join(missing)}")
    return found


def get_backend(name: str) -> Backend:
    if name == "auto":
        return choose_auto("cpu")[0]
    if name not in BACKENDS:
        raise KeyError(name)
    return backend_class(name)()


def describe() -> str:
    """One line for --help: each backend's name and what it is."""
    parts = [f"{name} ({backend_class(name).summary})" for name in BACKENDS]
    return "; ".join(parts) + "; auto: the first isolated one available, in that order"


def choose_auto(device: str) -> tuple[Backend, str | None]:
    """The first usable isolated backend, else the first usable other one with a note saying why."""
    reasons = []
    for name in BACKENDS:
        backend = get_backend(name)
        why = backend.unavailable(device)
        if why is None and backend.isolated:
            return backend, None
        if why is not None:
            reasons.append(f"{name}: {why}")
    fallback = next(get_backend(n) for n in BACKENDS if get_backend(n).unavailable(device) is None)
    return fallback, f"no sandbox available ({'; '.join(reasons)})"
