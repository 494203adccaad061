"""The bubblewrap backend: namespaces without a daemon (what Flatpak uses).

The worker runs in new user, PID, network, IPC, UTS, mount and cgroup
namespaces, as ``nobody``, with no capabilities, a cleared environment, the
system read-only, a size-capped private tmpfs as its only writable place, and
only the assigned GPU's device nodes. bwrap has no resource limits of its own,
so memory and process counts come from a cgroup (when the judge may create
one) and the judge's own timers and watchdog.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from judge.sandbox.base import INSIDE_CACHE, Backend, Job, Proc, prepare_cache, process_tree_memory, worker_env
from judge.sandbox.cgroups import Cgroup
from judge.sandbox.staging import new_stage

INSIDE_CODE = "/judge/code"
INSIDE_SUBMISSION = "/judge/submission"
SCRATCH = "/scratch"
# System files a Python process and Triton's launcher build need; nothing else of /etc.
ETC_FILES = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "passwd",
    "group",
    "nsswitch.conf",
    "localtime",
    "alternatives",
)
GPU_NODES = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools")


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


class _BwrapProc(Proc):
    def __init__(self, popen: subprocess.Popen, folder: Path, cgroup: Cgroup | None, stage: Path):
        self.popen = popen
        self.pid = popen.pid
        self.stdin = popen.stdin.fileno()
        self.stdout = popen.stdout.fileno()
        self.stderr = popen.stderr.fileno()
        self.submission_path = ""
        self.submission_dir = folder
        self.inside_dir = INSIDE_SUBMISSION
        self.cgroup = cgroup
        self.stage = stage

    def kill(self) -> None:
        # bwrap is PID 1's parent in the sandbox: when it dies the kernel kills
        # everything in the PID namespace, daemons included. (Not once reaped: its number may be another's.)
        for target in (lambda: os.killpg(self.pid, signal.SIGKILL), lambda: self.popen.kill()):
            if self.popen.returncode is not None:
                break
            try:
                target()
            except (ProcessLookupError, PermissionError):
                pass
        if self.cgroup is not None:
            self.cgroup.kill_all()

    def wait(self, timeout=None):
        try:
            code = self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        # bwrap exits with 128 + N when the sandboxed process died of signal N.
        if code is not None and 128 < code < 128 + 65:
            return -(code - 128)
        return code

    def memory_bytes(self, exact_above=None):
        # The cgroup's anonymous memory (not its whole usage: that counts the
        # page cache of every library read, which it reclaims), else PSS.
        if self.cgroup is not None:
            used = self.cgroup.memory_bytes()
            if used is not None:
                return used
        return process_tree_memory(self.pid, exact_above)

    def oom_killed(self) -> bool:
        return self.cgroup is not None and self.cgroup.oom_killed()

    def close(self):
        self.kill()
        self.wait(5)
        for stream in (self.popen.stdin, self.popen.stdout, self.popen.stderr):
            try:
                stream.close()
            except OSError:
                pass
        if self.cgroup is not None:
            self.cgroup.remove()
        shutil.rmtree(self.stage, ignore_errors=True)


def _python_roots() -> list[str]:
    """Directories the worker's Python needs: its prefixes (a venv and its base)."""
    roots = set()
    for p in (
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        os.path.dirname(sys.executable),
        os.path.dirname(os.path.realpath(sys.executable)),
    ):
        real = os.path.realpath(p)
        if not real.startswith("/usr/"):
            roots.add(real)
    # Drop roots nested in other roots.
    return sorted(r for r in roots if not any(r != o and r.startswith(o + os.sep) for o in roots))


def _system_binds() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), f"/{name}"]
        elif path.is_dir():
            args += ["--ro-bind", str(path), f"/{name}"]
    for rel in ETC_FILES:
        path = Path("/etc") / rel
        if path.exists():
            args += ["--ro-bind", str(path), str(path)]
    return args


class BwrapBackend(Backend):
    name = "bwrap"
    summary = "bubblewrap namespaces, no daemon"
    isolated = True
    litters = True
    lowers_priority = True
    worker_uid = None  # its user namespace maps the sandbox's nobody to the judge's own user

    def __init__(self):
        self.use_userns = None

    def unavailable(self, device: str = "cpu") -> str | None:
        if bwrap_path() is None:
            return "bubblewrap (bwrap) is not installed"
        probe = subprocess.run(
            [bwrap_path(), "--unshare-all", "--ro-bind", "/", "/", "--", "true"], capture_output=True, text=True
        )
        if probe.returncode != 0:
            return f"bwrap cannot create namespaces here: {probe.stderr.strip()[:200]}"
        return None

    def caveat(self) -> str | None:
        probe = Cgroup.create(1 << 30, 64)
        if probe is None:
            return (
                "bwrap could not create a cgroup here (run as root or in a delegated cgroup): the worker's "
                "processes are not capped and its memory is watched, not capped"
            )
        probe.remove()
        return None

    def _userns_args(self) -> list[str]:
        # Run as nobody inside a user namespace where the kernel allows one.
        if self.use_userns is None:
            probe = subprocess.run(
                [
                    bwrap_path(),
                    "--unshare-user",
                    "--uid",
                    "65534",
                    "--gid",
                    "65534",
                    "--ro-bind",
                    "/",
                    "/",
                    "--",
                    "true",
                ],
                capture_output=True,
            )
            self.use_userns = probe.returncode == 0
        return ["--unshare-user", "--uid", "65534", "--gid", "65534"] if self.use_userns else []

    def argv(self, job: Job, code: Path, folder: Path, env: dict, share: int = 1, module_args=()) -> list[str]:
        scratch_bytes = int(job.limits.scratch_mb) << 20
        args = [
            bwrap_path(),
            "--unshare-all",
            *self._userns_args(),
            "--die-with-parent",
            "--new-session",
            "--clearenv",
            "--cap-drop",
            "ALL",
            *_system_binds(),
            "--proc",
            "/proc",
            "--dev",
            "/dev",
        ]
        if share > 1:
            # A litter's (judge.sandbox.litter): each child its own scratch of the worker's size, SCRATCH/<i>
            # (judge.untrusted.litter moves it there), so that one child cannot use what its siblings leave
            # free (a red-team file was AC in a litter and RTE without, "no space left").
            args += ["--size", str(16 << 20), "--tmpfs", SCRATCH]
            for i in range(share):
                args += ["--size", str(scratch_bytes), "--tmpfs", f"{SCRATCH}/{i}"]
        else:
            args += ["--size", str(scratch_bytes), "--tmpfs", SCRATCH]
        args += ["--size", str((16 << 20) * max(1, share)), "--tmpfs", "/tmp"]
        # After the tmpfs mounts: a Python living under /tmp (a venv there) must
        # be bound on top of the private /tmp, not hidden by it.
        for root in _python_roots():
            args += ["--ro-bind", root, root]
        if job.cache is not None:
            args += ["--bind", str(job.cache), INSIDE_CACHE]
        args += [
            "--ro-bind",
            str(code),
            INSIDE_CODE,
            # The submission's directory, read-only: empty until the judge places the one file in it
            # (judge.sandbox.base.Proc.place), just before it names the file in "setup".
            "--ro-bind",
            str(folder),
            INSIDE_SUBMISSION,
            "--chdir",
            SCRATCH,
        ]
        if job.device == "cuda":
            gpu = job.gpu if job.gpu is not None else 0
            for node in (f"nvidia{gpu}", *GPU_NODES):
                if os.path.exists(f"/dev/{node}"):
                    args += ["--dev-bind", f"/dev/{node}", f"/dev/{node}"]
            args += ["--ro-bind", "/sys", "/sys"]
        for key, value in env.items():
            args += ["--setenv", key, value]
        # The sandbox's root (where bwrap made the mount points) becomes
        # read-only too: only /scratch and /tmp can be written.
        args += ["--remount-ro", "/"]
        # sys.executable, not its real path: a venv is recognised by the path it is run from.
        return args + ["--", sys.executable, "-P", "-m", job.module, *module_args]

    def spawn(self, job: Job, *, extra_fds=(), args=(), share: int = 1) -> Proc:
        stage, code, folder = new_stage("judge-bwrap-")
        prepare_cache(job)
        env = worker_env(job, code_root=INSIDE_CODE, scratch=SCRATCH, cache=job.cache_inside(INSIDE_CACHE))
        env["PYTHONNOUSERSITE"] = "1"
        share = max(1, int(share))
        # (A litter's, shared by its children, holds a cgroup for each: judge.sandbox.litter.)
        cgroup = Cgroup.create(
            (job.limits.memory_mb << 20) * share, job.limits.processes * share, nested=share > 1, cpu_share=share
        )

        def enter():
            os.setsid()
            if cgroup is not None:
                cgroup.enter()
            import resource

            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            resource.setrlimit(resource.RLIMIT_FSIZE, (256 << 20, 256 << 20))

        popen = subprocess.Popen(
            self.argv(job, code, folder, env, share, args),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=enter,
            env={"PATH": "/usr/bin:/bin"},
            pass_fds=tuple(extra_fds),
        )
        proc = _BwrapProc(popen, folder, cgroup, stage)
        if job.submission is not None:
            proc.place(job.submission)
        return proc
