"""The hostile-submission suite against every real sandbox available here.

Each file in sandbox/hostile/<verdict>/ must get that verdict under docker and
under bwrap; afterwards nothing it started may be left (processes, containers,
cgroups, staging directories, files on the host), and the judge must have
answered within its limits plus a few seconds. A backend that is missing is
skipped, unless JUDGE_REQUIRE_SANDBOXES names it (CI does), then it fails.
"""

import os
import time
from pathlib import Path

import pytest

from judge import intake
from judge.options import Options
from judge.problems import VERDICT_DIRS, find_problem
from judge.sandbox import get_backend
from judge.selftest import declared_verdict, expect_texts
from judge.session import Session

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = sorted((ROOT / "sandbox" / "hostile").glob("*/*.py"))
BACKENDS = ["docker", "bwrap"]
REQUIRED = {b for b in os.environ.get("JUDGE_REQUIRE_SANDBOXES", "").split(",") if b}
CASE_SECONDS = 10
MARKER = "judge-hostile-marker-5b1f"
DAEMON = b"sleep\x00987654"


def usable(name):
    backend = get_backend(name)
    why = backend.unavailable()
    if why is not None:
        if name in REQUIRED:
            pytest.fail(f"sandbox {name} is required here but unavailable: {why}")
        pytest.skip(f"sandbox {name} unavailable: {why}")
    return backend


class Recording:
    """Wraps a backend and keeps every worker it starts, to inspect afterwards."""

    def __init__(self, backend):
        self.backend = backend
        self.name = backend.name
        self.isolated = backend.isolated
        self.procs = []

    def caveat(self):
        return self.backend.caveat()

    def spawn(self, job):
        proc = self.backend.spawn(job)
        self.procs.append(proc)
        return proc


def _daemons() -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if DAEMON in Path(f"/proc/{pid}/cmdline").read_bytes():
                    found.append(int(pid))
            except OSError:
                pass
    return found


def _assert_nothing_left(backend_name, procs):
    for proc in procs:
        if backend_name == "docker":
            import docker

            with pytest.raises(docker.errors.NotFound):
                proc.container.reload()
        else:
            assert proc.popen.poll() is not None, "the bwrap process is still alive"
            if proc.cgroup is not None:
                assert not any(d.exists() for d in proc.cgroup.dirs), "a cgroup was left behind"
        assert not proc.stage.exists(), "a staging directory was left behind"
    for place in (Path("/"), Path("/tmp"), Path("/etc"), Path("/var/tmp"), ROOT, *(p.parent for p in HOSTILE)):
        assert not (place / MARKER).exists(), f"a file escaped the sandbox: {place / MARKER}"


# The README's test command runs the first file of each verdict class under each sandbox; CI runs them all.
SLICE = {next(p for p in HOSTILE if p.parent == d) for d in {p.parent for p in HOSTILE}}


@pytest.mark.corpus
@pytest.mark.parametrize("backend_name", BACKENDS)
@pytest.mark.parametrize(
    "path",
    [p if p in SLICE else pytest.param(p, marks=pytest.mark.full) for p in HOSTILE],
    ids=[f"{p.parent.name}-{p.stem}" for p in HOSTILE],
)
def test_hostile_submission_is_contained(backend_name, path, monkeypatch):
    _contained(backend_name, path, monkeypatch, pooled=False)


# With the worker pool (judge.pool) the workers are spawned ahead by the pool, without a submission, and
# handed to the session: the same containment. The README's command runs these few (a file the pool placed
# in a worker already running, read; a process left behind; a forged reply); -m full runs them all.
POOL_SLICE = {"read_reference", "daemon_outlives", "forges_results"}


@pytest.mark.corpus
@pytest.mark.parametrize("backend_name", BACKENDS)
@pytest.mark.parametrize(
    "path",
    [p if p.stem in POOL_SLICE else pytest.param(p, marks=pytest.mark.full) for p in HOSTILE],
    ids=[f"{p.parent.name}-{p.stem}" for p in HOSTILE],
)
def test_hostile_submission_is_contained_in_a_pooled_worker(backend_name, path, monkeypatch):
    _contained(backend_name, path, monkeypatch, pooled=True)


# A lone `submit` forks its workers in a litter (judge.sandbox.litter): two workers of the submission in one
# sandbox, forked from a process that imported torch for both. The same containment; docker has no litters.
# The fork bomb is here: each child of a litter has a cgroup of its own, so that the bomb's processes are not
# each measured as the litter's before the kill.
LITTER_SLICE = POOL_SLICE | {"reads_judge_code", "fork_bomb"}


@pytest.mark.corpus
@pytest.mark.parametrize(
    "path",
    [p if p.stem in LITTER_SLICE else pytest.param(p, marks=pytest.mark.full) for p in HOSTILE],
    ids=[f"{p.parent.name}-{p.stem}" for p in HOSTILE],
)
def test_hostile_submission_is_contained_in_a_litter(path, monkeypatch):
    _contained("bwrap", path, monkeypatch, pooled=True, litter=True)


def _contained(backend_name, path, monkeypatch, pooled: bool, litter: bool = False):
    backend = usable(backend_name)
    # Without cgroups nothing caps the number of processes, and memory is
    # watched rather than capped: only these two would harm the host then.
    if backend.caveat() and path.stem in ("fork_bomb", "host_memory_bomb"):
        pytest.skip(f"not safe to run here: {backend.caveat()}")
    recording = Recording(backend)
    if pooled:
        from judge.pool import client as pool_client
        from judge.pool import server as pool_server

        # The backend's own class, recording the workers it starts: the pool spawns through it, and so does the
        # session when the pool has none of a kind warm.
        base = type(backend)
        recorded = recording.procs

        class Recorded(base):
            def spawn(self, job, **kw):
                proc = base.spawn(self, job, **kw)
                recorded.append(proc)
                return proc

        backend = Recorded()
        monkeypatch.setattr(intake, "backend_for", lambda name, device: (backend, None))
        monkeypatch.setattr(pool_server, "backend_for", lambda key: backend)
        server = pool_server.PoolServer(size=2 if litter else 1)
        monkeypatch.setattr(pool_client, "_socket", server.path)
    else:
        monkeypatch.setattr(intake, "backend_for", lambda name, device: (recording, None))
    try:
        _judge_contained(backend_name, backend, path, recording, server if pooled else None, litter)
    finally:
        if pooled:
            server.close()
    _assert_nothing_left(backend_name, recording.procs)


def _judge_contained(backend_name, backend, path, recording, server, litter=False):
    device = os.environ.get("JUDGE_TEST_DEVICE", "cpu")  # tests/gpu/run.sh sets cuda
    # The folder's verdict, unless the file names another for where it runs (`# verdict-cpu:`: a probe of the
    # GPU's kernel cache is contained in the interpreter, which has none on the host).
    expected = declared_verdict(path, VERDICT_DIRS[path.parent.name], interpret=device == "cpu")
    # The static scan would reject most of these before they run; the point
    # here is what the sandbox contains, so it is off.
    # One worker: the suite is about containment, and two workers per file, beside pytest's other
    # process on two cores, slowed the memory bombs past the shortened case limit (TLE, not MLE).
    # A memory bomb gets three times the shortened limit: filling 4 GiB on a CPU shared with the rest of
    # the suite took longer than 10 s in CI (TLE), and its verdict is about memory, not time.
    # So does the file that walks the whole file system for the reference: its walk, not its verdict, is
    # what a loaded host slows down (TLE at 10 s under bwrap in CI, pooled and unpooled alike).
    # (The walk is once per worker, in its first case; on a cold directory cache, beside the rest of the suite, it
    # took 30 s and more in a dry run of CI, and more than 60 s in the CI run of 0c45c9e, pooled under bwrap, while
    # the service test's fifty submissions ran beside it. Its limit is therefore loose: a slow walk is the host's
    # doing, and what the test checks, that no judge file is in reach, does not depend on it.)
    seconds = (
        3 * CASE_SECONDS if expected == "MLE" else 30 * CASE_SECONDS if path.stem == "read_reference" else CASE_SECONDS
    )
    options = Options(
        sandbox=backend_name,
        seed=1,
        device=device,
        interpret=device == "cpu",
        static_scan=False,
        speed=False,
        workers=2 if litter else 1,
        limits={"case_seconds_interpret": seconds, "case_seconds": seconds, "startup_seconds": 60},
    )
    problem = find_problem("93")
    if server is not None:  # a worker of each kind the session asks for, warm before it starts
        from dataclasses import replace

        from judge.options import limits_for
        from judge.sandbox import Job

        # The session's own job, kernel cache included (compiled on a GPU, a job has one; the H200 run of
        # 2026-12-01 warmed workers without it, and the session, whose key differs, took none).
        job = Job(
            submission=path,
            scratch=ROOT,
            device=device,
            interpret=device == "cpu",
            limits=limits_for(problem, options),
            gpu=options.gpu,
            cache=intake.kernel_cache(path, device, device == "cpu"),
        )
        server.warm(backend, job, n=2 if litter else 1, own_cache=litter, litter=litter)
        server.warm(backend, replace(job, module="judge.untrusted.replay"))
        deadline = time.monotonic() + 60
        while server.idle() < (3 if litter else 2) and time.monotonic() < deadline:
            time.sleep(0.1)
    started = time.monotonic()
    report = Session(problem, path, options).run()
    elapsed = time.monotonic() - started
    if server is not None:
        assert report.timing.get("pooled_starts", 0) >= 1, "the session did not take a pooled worker"
    if litter:
        assert report.timing.get("litter_starts", 0) >= 1, "the session did not take a litter's worker"

    assert report.verdict.value == expected, f"{report.verdict.value}: {report.message}"
    text = report.message + " ".join(g.message for g in report.groups)
    for wanted in expect_texts(path, interpret=device == "cpu"):
        assert wanted in text, f"the report does not say {wanted!r}: {report.message}"
    # A hang costs one case limit: the group where it hung ends there and the later groups are skipped (said
    # by the report, not by a wall clock: on 2 loaded cores, with the pool starting replacements beside a
    # fork bomb, one CI run took 33.8 s where 30 had been allowed).
    if expected == "TLE":
        first = next(i for i, g in enumerate(report.groups) if g.verdict.value == "TLE")
        assert all(g.skipped and "TLE" in g.skipped for g in report.groups[first + 1 :]), [
            (g.name, g.skipped) for g in report.groups
        ]
        assert "killed" in report.groups[first].message or "limit" in report.groups[first].message
    assert elapsed < 300, f"the judge took {elapsed:.1f} s"  # a judge that hangs with the submission
    assert recording.procs, "no worker was started"
    if path.stem == "daemon_outlives":
        deadline = time.monotonic() + 15  # another test may be running its own daemon right now
        while _daemons() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not _daemons(), "a daemon outlived the run"
