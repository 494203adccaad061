"""A sandbox backend's capabilities, not its name, decide what the judge does with it: litters, the worker
pool's rebuild, the replay worker's yielding, the kernel cache's seeding (judge.sandbox.base.CAPABILITIES).

Each check holds a registered backend of another name up against the one it copies, and one with the copied
name but other capabilities, so that a decision taken from the name fails here either way. No worker starts:
each backend's spawn fails at once, and what the judge tried is read from what it said."""

import dataclasses
import time
from pathlib import Path

import pytest

from judge import driver_modules
from judge.pool import key as pool_key
from judge.pool.server import PoolServer
from judge.sandbox import BACKENDS, backend_class, base
from judge.sandbox.base import Backend, Job, Limits
from judge.sandbox.docker_engine import DockerBackend
from judge.sandbox.litter import spawn_litter
from judge.sandbox.process import ProcessBackend

LIMITS = Limits(case_seconds=10, run_seconds=60, memory_mb=2048, output_bytes=1 << 20, processes=64)


class SpawnRefused(Exception):
    pass


class _NoSpawn:
    def spawn(self, job, **kw):
        raise SpawnRefused(job.module)


class RenamedProcess(_NoSpawn, ProcessBackend):
    name = "renamed-process"


class RenamedDocker(_NoSpawn, DockerBackend):
    name = "renamed-docker"


class ProcessWithout(_NoSpawn, ProcessBackend):
    """Registered as "process", declaring none of process's capabilities."""

    litters = False
    lowers_priority = False
    worker_uid = 65534

    def rebuild_args(self, device):
        return {}


class Undeclared(Backend):
    name = "undeclared"
    isolated = True  # (and nothing else)


@pytest.fixture
def registered(monkeypatch):
    here = __name__
    for name, cls in (
        ("renamed-process", "RenamedProcess"),
        ("renamed-docker", "RenamedDocker"),
        ("process", "ProcessWithout"),
        ("undeclared", "Undeclared"),
    ):
        monkeypatch.setitem(BACKENDS, name, f"{here}:{cls}")


def _job(tmp_path, module="judge.untrusted", interpret=True, cache=None) -> Job:
    return Job(
        submission=None, scratch=tmp_path, device="cpu", interpret=interpret, limits=LIMITS, module=module, cache=cache
    )


def test_every_registered_backend_declares_its_capabilities(registered):
    for name in ("docker", "bwrap", "renamed-process", "process"):
        backend_class(name)
    with pytest.raises(TypeError, match="does not declare litters, lowers_priority, worker_uid"):
        backend_class("undeclared")


def test_the_replay_worker_yields_by_capability(registered, tmp_path, monkeypatch):
    monkeypatch.setattr(base, "_idle_cores", lambda: True)
    job = _job(tmp_path, module=base.REPLAY_MODULE)
    assert base.yields_cores(job, RenamedProcess())
    assert not base.yields_cores(job, RenamedDocker())
    assert not base.yields_cores(job, ProcessWithout())


def test_a_litter_is_tried_by_capability(registered, tmp_path):
    for backend, tried in ((RenamedProcess(), True), (RenamedDocker(), False), (ProcessWithout(), False)):
        said = []
        assert spawn_litter(backend, _job(tmp_path), 2, log=said.append) is None
        assert any("SpawnRefused" in line for line in said) == tried, (backend.name, said)


def test_the_pool_rebuilds_a_backend_from_what_it_declares(registered, tmp_path):
    key = pool_key.key_of(RenamedDocker(image="an-image"), _job(tmp_path))
    again = pool_key.backend_for(key)
    assert type(again) is RenamedDocker and again.image == "an-image"
    key = pool_key.key_of(RenamedProcess(), _job(tmp_path))
    assert type(pool_key.backend_for(key)) is RenamedProcess


def _pool_tried(backend, tmp_path) -> list[str]:
    """What a pool said when it spawned two workers of ``backend``'s kind (each spawn refused)."""
    said = []
    server = PoolServer(size=2, log=said.append)
    try:
        assert server.warm(backend, _job(tmp_path), n=2)
        deadline = time.monotonic() + 30
        while server.stats["spawn_failed"] < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.stats["spawn_failed"] == 2, said
    finally:
        server.close()
    return said


def test_a_pool_forks_a_litter_by_capability(registered, tmp_path):
    assert any(line.startswith("litter: could not start") for line in _pool_tried(RenamedProcess(), tmp_path))
    for backend in (RenamedDocker(), ProcessWithout()):
        assert not any(line.startswith("litter:") for line in _pool_tried(backend, tmp_path)), backend.name


def test_a_cache_for_another_user_is_not_seeded_by_capability(registered, tmp_path, monkeypatch):
    seeded = []
    monkeypatch.setattr(driver_modules, "seed", lambda path, root=None: seeded.append(Path(path)))
    for backend, seeds in ((RenamedProcess(), True), (RenamedDocker(), False), (ProcessWithout(), False)):
        cache = tmp_path / backend.name / "cache"
        server = PoolServer(size=0)  # (nothing spawned: the cache is made when the kind is warmed)
        try:
            assert server.warm(
                backend, dataclasses.replace(_job(tmp_path, interpret=False), cache=cache), own_cache=True
            )
        finally:
            server.close()
        assert cache.is_dir() and (cache in seeded) == seeds, backend.name
