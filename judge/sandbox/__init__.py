"""Sandbox backends, chosen by name (``--sandbox``)."""

from __future__ import annotations

from judge.sandbox.base import Backend, Job, Limits, Proc  # noqa: F401


def backend_names() -> list[str]:
    return ["auto", "docker", "bwrap", "process"]


def get_backend(name: str) -> Backend:
    if name == "process":
        from judge.sandbox.process import ProcessBackend

        return ProcessBackend()
    if name == "bwrap":
        from judge.sandbox.bwrap import BwrapBackend

        return BwrapBackend()
    raise KeyError(name)
