"""The Docker backend: one throw-away container per worker, through the docker SDK.

The container has no network, a read-only root, a size-capped tmpfs for
scratch, no capabilities, no-new-privileges, a non-root user, a pids limit,
memory = memory + swap, no core dumps, private IPC and an init process; with
a GPU, exactly the assigned one through a device request. The judge's own
timer kills it (the SDK's wait timeout is only an HTTP timeout); an OOM kill
reads as MLE; the container is always removed.

The worker's stdin/stdout/stderr travel over Docker's attach socket; two
threads turn that into the plain pipes every backend hands the judge.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import struct
import threading
import time
from pathlib import Path

from judge.sandbox.base import INSIDE_CACHE, Backend, Job, Proc, prepare_cache, worker_env
from judge.sandbox.cgroups import Cgroup
from judge.sandbox.staging import new_stage
from judge.shared import niceness

LABEL = "org.triton-judge.untrusted"
INSIDE_CODE = "/judge/code"
INSIDE_SUBMISSION = "/judge/submission"
SCRATCH = "/scratch"
IMAGES = {"cpu": "triton-judge-cpu:latest", "cuda": "triton-judge-gpu:latest"}
IMAGE_PATH = "/opt/judge/bin:/usr/local/bin:/usr/bin:/bin"


def default_image(device: str) -> str:
    from judge.settings import settings

    return settings().docker_image or IMAGES["cuda" if device == "cuda" else "cpu"]


_client = None


def client():
    """One SDK client per process (each holds a connection pool)."""
    global _client
    if _client is None:
        import docker  # imported lazily: only this backend needs the SDK

        _client = docker.from_env(timeout=60)
    return _client


class _DockerProc(Proc):
    def __init__(self, container, sock, folder: Path, stage: Path):
        self.container = container
        self._cgroup = None  # its memory cgroup (False: not readable from here)
        self.pid = -1
        self.submission_path = ""
        self.submission_dir = folder
        self.inside_dir = INSIDE_SUBMISSION
        self.stage = stage
        self._sock = getattr(sock, "_sock", sock)
        self._sock_wrapper = sock  # keeps the HTTP response (and the socket) alive
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        self.stdin, self.stdout, self.stderr = in_w, out_r, err_r
        # Each descriptor is closed exactly once, by its owner: a second close
        # could hit a number already reused (say, by the SDK's next socket).
        self._closed: set[int] = set()
        self._lock = threading.Lock()
        self._exit: int | None = None
        self._oom = False
        self._discard = False
        threading.Thread(target=self._pump_stdin, args=(in_r,), daemon=True).start()
        threading.Thread(target=self._demux, args=(out_w, err_w), daemon=True).start()

    def _close_once(self, fd: int) -> None:
        with self._lock:
            if fd in self._closed:
                return
            self._closed.add(fd)
        try:
            os.close(fd)
        except OSError:
            pass

    def _pump_stdin(self, fd: int) -> None:
        try:
            while True:
                data = os.read(fd, 1 << 16)
                if not data:
                    break
                self._sock.sendall(data)
        except OSError:
            pass
        self._close_once(fd)
        try:
            self._sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def _demux(self, out_w: int, err_w: int) -> None:
        """Docker multiplexes stdout and stderr as frames: [stream, 0, 0, 0, size(4)] + payload."""
        buf = b""
        try:
            while True:
                chunk = self._sock.recv(1 << 16)
                if not chunk:
                    break
                buf += chunk
                while len(buf) >= 8:
                    stream, size = buf[0], struct.unpack(">I", buf[4:8])[0]
                    if len(buf) < 8 + size:
                        break
                    payload, buf = buf[8 : 8 + size], buf[8 + size :]
                    target = out_w if stream == 1 else err_w
                    view = memoryview(payload)
                    while view and not self._discard:
                        try:
                            view = view[os.write(target, view) :]
                        except OSError:
                            # The judge closed its end: keep draining the
                            # socket so the daemon is never stuck writing to it.
                            self._discard = True
        except OSError:
            pass
        finally:
            self._close_once(out_w)
            self._close_once(err_w)

    def _state(self) -> dict:
        try:
            self.container.reload()
            return self.container.attrs.get("State", {})
        except Exception:  # noqa: BLE001 - the container is gone
            return {"Running": False}

    def kill(self) -> None:
        # Hang up the attach stream first: a daemon still copying output that
        # nobody reads holds up the kill itself (seen: a minute per kill).
        self._discard = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self.container.kill()
        except Exception:  # noqa: BLE001 - already stopped or removed
            pass

    def wait(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            state = self._state()
            if not state.get("Running", False):
                self._oom = self._oom or bool(state.get("OOMKilled"))
                code = state.get("ExitCode", -9)
                # An exit status of 128 + N means signal N (tini reports it so).
                self._exit = -(code - 128) if 128 < code < 128 + 65 else code
                return self._exit
            if deadline is not None and time.monotonic() >= deadline:
                return None
            time.sleep(0.05)

    def _container_cgroup(self):
        """The container's cgroup on this host (False where it is not found), looked up once."""
        if self._cgroup is None:
            cid = getattr(self.container, "id", None)
            self._cgroup = (Cgroup.of_container(cid) if cid else None) or False
        return self._cgroup

    def memory_bytes(self, exact_above: int | None = None) -> int | None:
        # Read from the container's cgroup when it is on this host: the stats
        # API takes a second or two per call, too slow for a watchdog.
        cgroup = self._container_cgroup()
        return cgroup.memory_bytes() if cgroup else None

    def pids(self) -> set[int]:
        # The container's processes, from its cgroup on this host (they are dockerd's descendants, not ours).
        cgroup = self._container_cgroup()
        return cgroup.pids() if cgroup else set()

    def oom_killed(self) -> bool:
        if not self._oom:
            self._oom = bool(self._state().get("OOMKilled"))
        return self._oom

    def close(self) -> None:
        self.kill()
        self.wait(10)
        try:
            self.container.remove(force=True)
        except Exception:  # noqa: BLE001
            pass
        try:
            # Shut down, not close: the SDK's connection pool owns the socket and
            # closes it itself (a second close could hit a reused descriptor).
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        for fd in (self.stdin, self.stdout, self.stderr):
            self._close_once(fd)
        shutil.rmtree(self.stage, ignore_errors=True)


class DockerBackend(Backend):
    name = "docker"
    summary = "a throw-away container, needs the engine and the image"
    isolated = True
    litters = False  # the engine cannot pass descriptors into a container
    lowers_priority = False
    worker_uid = 65534  # the container's user, nobody

    def __init__(self, image: str | None = None):
        self.image = image

    def image_for(self, device: str) -> str:
        return self.image or default_image(device)

    def rebuild_args(self, device: str) -> dict:
        return {"image": self.image_for(device)}

    def unavailable(self, device: str = "cpu") -> str | None:
        try:
            import docker
        except ImportError:
            return "the docker SDK is not installed (pip install 'triton-judge[docker]')"
        try:
            c = client()
            c.ping()
        except Exception as exc:  # noqa: BLE001
            return f"no Docker engine answers ({type(exc).__name__})"
        image = self.image_for(device)
        try:
            c.images.get(image)
        except docker.errors.ImageNotFound:
            return f"the image {image} does not exist: build it with `python -m judge sandbox build`"
        return None

    def spawn(self, job: Job) -> Proc:
        from docker.types import DeviceRequest, LogConfig, Ulimit

        stage, code, folder = new_stage("judge-docker-")
        prepare_cache(job, uid=self.worker_uid)
        env = worker_env(job, code_root=INSIDE_CODE, scratch=SCRATCH, cache=job.cache_inside(INSIDE_CACHE))
        env["PATH"] = IMAGE_PATH
        env["PYTHONNOUSERSITE"] = "1"
        env.pop("LD_LIBRARY_PATH", None)  # the host's paths mean nothing in the image
        memory = f"{job.limits.memory_mb}m"
        kwargs = {}
        if job.device == "cuda":
            env["CUDA_VISIBLE_DEVICES"] = "0"  # the one GPU the container is given
            kwargs["device_requests"] = [DeviceRequest(device_ids=[str(job.gpu or 0)], capabilities=[["gpu"]])]
        container = client().containers.create(
            self.image_for(job.device),
            command=["python3", "-P", "-m", job.module],
            user="65534:65534",
            working_dir=SCRATCH,
            environment=env,
            stdin_open=True,
            tty=False,
            network_mode="none",
            read_only=True,
            # Owned by the worker's user (a working_dir resets the mode), and exec:
            # Triton builds its launcher there as a shared object and loads it.
            tmpfs={
                SCRATCH: f"rw,exec,size={job.limits.scratch_mb}m,mode=1777,uid=65534,gid=65534",
                "/tmp": "rw,size=16m,mode=1777,uid=65534,gid=65534",
            },
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            pids_limit=job.limits.processes,
            cpu_shares=niceness.weight(niceness.own()),  # a container weighs what its starter weighs (niceness)
            mem_limit=memory,
            memswap_limit=memory,
            ulimits=[Ulimit(name="core", soft=0, hard=0)],
            ipc_mode="private",
            init=True,
            volumes={
                str(code): {"bind": INSIDE_CODE, "mode": "ro"},
                # Empty until the judge places the one file in it (judge.sandbox.base.Proc.place).
                str(folder): {"bind": INSIDE_SUBMISSION, "mode": "ro"},
                **({str(job.cache): {"bind": INSIDE_CACHE, "mode": "rw"}} if job.cache is not None else {}),
            },
            labels={LABEL: secrets.token_hex(8)},
            log_config=LogConfig(type="none"),  # output reaches the judge only through its capped pipe
            **kwargs,
        )
        try:
            sock = container.attach_socket(params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
            container.start()
        except Exception:
            container.remove(force=True)
            shutil.rmtree(stage, ignore_errors=True)
            raise
        proc = _DockerProc(container, sock, folder, stage)
        if job.submission is not None:
            proc.place(job.submission)
        return proc


def leftover_containers() -> list:
    """Worker containers that still exist (there should be none between runs)."""
    return client().containers.list(all=True, filters={"label": LABEL})
