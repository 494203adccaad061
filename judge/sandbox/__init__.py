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
    if name == "docker":
        from judge.sandbox.docker_engine import DockerBackend

        return DockerBackend()
    if name == "auto":
        return choose_auto("cpu")[0]
    raise KeyError(name)


def choose_auto(device: str) -> tuple[Backend, str | None]:
    """docker if the engine answers and the image exists, else bwrap, else process (with a warning)."""
    from judge.sandbox.bwrap import BwrapBackend
    from judge.sandbox.docker_engine import DockerBackend
    from judge.sandbox.process import ProcessBackend

    docker = DockerBackend()
    why_docker = docker.unavailable(device)
    if why_docker is None:
        return docker, None
    bwrap = BwrapBackend()
    why_bwrap = bwrap.unavailable(device)
    if why_bwrap is None:
        return bwrap, None
    return ProcessBackend(), f"no sandbox available (docker: {why_docker}; bwrap: {why_bwrap})"
