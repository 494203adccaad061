"""Where grading jobs run: local worker processes, or Ray tasks (one host or many).

Both executors take (key, job) pairs and call ``on_result(key, report)`` in
the driver's thread as each job ends, in the order they end; only that thread
writes the store. The jobs may be a list (``judge grade``) or an endless
source (``judge serve``'s queue): the local executor takes a job only when a
slot is free, Ray takes what there is; a source yields None when it has no
job yet (it waits a moment itself first), and the executor delivers the
results of the jobs that ended meanwhile before asking again. ``stop()``
(from another thread) ends the jobs in flight; their reports are IEs, which
a stopping driver does not record. Each job is a child ``python -m judge.grading.job`` (see
``job.py``), so a crashing judge costs one job, never the others.

GPUs: at most N jobs per GPU at a time (a slot per job; the same GPU index in N
slots), each job seeing only its GPU (``CUDA_VISIBLE_DEVICES``; with Ray,
the GPU Ray assigned to the task). What runs of them at once is the GPU's
admission's to say (judge.gpu_admission): each job reserves its memory there,
with every other judge on the host, and waits for its turn; their speed runs
queue for the GPU's lock. A job that the GPU's filling by others made an IE is
judged again by the job itself (judge.judging). On the CPU: N jobs at once,
each in Triton's interpreter.
"""

from __future__ import annotations

import base64
import os
import queue
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path

from judge.grading.job import REPO_ROOT, Spares, ie_report, run_subprocess, stop_children

OnResult = Callable[[object, dict], None]
# What a job source yields: (key, job), or None for "no job yet".
Jobs = Iterable["tuple[object, dict] | None"]


MAX_JOBS_PER_GPU = 16


def jobs_per_gpu(gpus: int) -> int:
    """Submissions judged at once on each GPU by default. How many fit in its memory is the GPU's admission's to
    say (judge.gpu_admission: a job waits there for room, its test workers sized to what is free), so the slots
    only bound the host's part: one job per core a GPU has but four (the judges' own work and the compilers'
    children), 1 to MAX_JOBS_PER_GPU."""
    cores = os.cpu_count() or 1
    return max(1, min(MAX_JOBS_PER_GPU, cores // max(1, gpus) - 4))


def jobs_on_cpu() -> int:
    """Submissions judged at once in the interpreter by default: one per 4 cores (each spreads its cases over
    up to 4 workers of its own, judge.options.auto_workers)."""
    return max(1, (os.cpu_count() or 1) // 4)


def workers_per_job(slots: list) -> int | None:
    """Workers each job spreads its cases over when several jobs share a GPU: the host's cores split
    between them (None: the job decides, judge.options.auto_workers). The ``workers`` setting (JUDGE_WORKERS,
    judge.settings), set for the grading command, gives every job that many instead."""
    from judge.settings import settings

    if settings().workers:
        return settings().workers
    gpu_slots = [s for s in slots if s is not None]
    if len(gpu_slots) <= 1:
        # One job at a time (or none on a GPU): the host is its own, as for a lone submit, which picks from
        # the cores and the device's memory (judge.options.auto_workers).
        return None
    cores = os.cpu_count() or 1
    return max(1, min(8, cores // (2 * len(gpu_slots))))


class ExecutorError(Exception):
    """The executor cannot start (e.g. Ray missing): a usage error, one line."""


class LocalExecutor:
    """N jobs at once on this host: one slot per GPU (exclusive), or N interpreter slots on the CPU.

    ``pool``: warm workers kept per kind of worker (judge.pool), handed to the jobs; 0: none, each job starts
    its own. ``nice``: the job processes' CPU niceness (judge.grading.job.spawn_job)."""

    name = "local"

    def __init__(self, slots: list[int | None], timeout: float, pool: int = 0, log=None, nice: int = 0):
        self.slots = slots
        self.timeout = timeout
        self.nice = nice
        self.pool = pool
        self.log = log
        self.pool_stats: dict | None = None
        self.spare_stats: dict | None = None  # job processes started ahead (judge.grading.job.Spares)

    def run(self, jobs: Jobs, on_result: OnResult) -> None:
        from judge.pool.server import PoolServer

        server = None
        if self.pool > 0:
            try:
                server = PoolServer(self.pool, log=self.log)
            except OSError as exc:  # e.g. no Unix socket where tempfile puts it: every job starts its own
                if self.log:
                    self.log(f"worker pool: not started ({exc}); every job starts its own workers")
        try:
            self._run(jobs, on_result, server)
        finally:
            if server is not None:
                server.close()
                self.pool_stats = dict(server.stats)

    def _run(self, jobs: Jobs, on_result: OnResult, server) -> None:
        free: queue.Queue = queue.Queue()
        for slot in self.slots:
            free.put(slot)
        workers = workers_per_job(self.slots)
        pool_socket = server.path if server is not None else None
        # The job processes: one started ahead for each slot, so that the next job finds its process's imports
        # done.
        spares = Spares(workers=workers, pool=pool_socket, nice=self.nice)
        per_gpu = Counter(self.slots)
        total = len(jobs) if hasattr(jobs, "__len__") else None
        begun = {"n": 0}
        begun_lock = threading.Lock()

        def one(spec):
            gpu = free.get()  # a slot is held by exactly one job at a time (a GPU has --jobs slots)
            try:
                proc = spares.take(gpu)
                with begun_lock:
                    begun["n"] += 1
                    left = None if total is None else total - begun["n"]
                # The next jobs' processes on this GPU, while this one runs: one per slot, and none started
                # while as many wait on the other GPUs as jobs are left (which GPU the next job gets is not
                # known: with several GPUs a roster's end can leave some unused, at most one a slot).
                want = per_gpu[gpu] if left is None else max(0, min(per_gpu[gpu], left - spares.waiting(gpu)))
                try:
                    spares.refill(gpu, want)
                except OSError:
                    pass  # no process to spare now (fork failed): the next job starts its own
                return run_subprocess(
                    spec, timeout=self.timeout, gpu=gpu, workers=workers, pool=pool_socket, proc=proc, nice=self.nice
                )
            finally:
                free.put(gpu)

        try:
            self._dispatch(jobs, on_result, server, one, total)
        finally:
            spares.close()
            self.spare_stats = dict(spares.stats)

    def _dispatch(self, jobs: Jobs, on_result: OnResult, server, one, total) -> None:
        source, more = iter(jobs), True
        # A list of jobs (judge grade): the pool warms no more workers once the last job is under way. (An
        # endless source, the service's queue, keeps them warm for the next submission.)
        dispatched = 0
        with ThreadPoolExecutor(max_workers=len(self.slots)) as pool:
            pending = {}
            while more or pending:
                idle = False
                while more and len(pending) < len(self.slots):  # a job only for a free slot
                    try:
                        item = next(source)
                    except StopIteration:
                        more = False
                        if server is not None:
                            server.drain()  # the last jobs are under way: warm no more workers
                        break
                    if item is None:
                        idle = True  # nothing to run now: deliver what ended, then ask again
                        break
                    key, spec = item
                    pending[pool.submit(one, spec)] = key
                    dispatched += 1
                    if server is not None and dispatched == total:
                        server.drain()
                if not pending:
                    continue
                # Every slot busy, or the source ended: wait for a job to end. Else only look.
                full = not more or len(pending) >= len(self.slots)
                done, _ = wait(pending, timeout=None if full and not idle else 0, return_when=FIRST_COMPLETED)
                for future in done:
                    key = pending.pop(future)
                    try:
                        report = future.result()
                    except Exception as exc:  # noqa: BLE001 - a bug in the thread, not the job: IE, go on
                        report = ie_report(None, f"{type(exc).__name__}: {exc}")
                    on_result(key, report)

    def start(self) -> None:
        """Nothing to start: jobs run in child processes of this one."""

    def stop(self) -> None:
        """End the jobs in flight now (their children get SIGTERM; their reports come back as IEs)."""
        stop_children()


def _ray():
    try:
        import ray  # noqa: F401 - imported only when --executor ray is asked for
    except ImportError:
        raise ExecutorError(
            "--executor ray: Ray is not installed; install it with: pip install -e '.[grade]'"
        ) from None
    return ray


def _ray_task(spec: dict, timeout: float, use_gpu: bool) -> dict:
    """Body of one Ray task: the same child-process job as locally, on the GPU Ray gave this task."""
    gpu = None
    if use_gpu:
        import ray

        ids = ray.get_gpu_ids()
        gpu = int(ids[0]) if ids else None
    return run_subprocess(spec, timeout=timeout, gpu=gpu)


class RayExecutor:
    """Each job a Ray task asking for one GPU (or one CPU in interpreter mode); results return to the driver.

    Without an address, a local Ray instance is started with as many CPUs (or
    GPUs) as the grading asks for, which is also how CI tests it. With one, the
    tasks go to that cluster: every node needs the judge installed (the same
    checkout at the same path, or the package) and, for GPU work, its GPUs
    registered with Ray. The submission's bytes travel with the task, so nodes
    need no shared file system.
    """

    name = "ray"

    def __init__(self, *, address: str | None, slots: list[int | None], use_gpu: bool, timeout: float):
        self.ray = _ray()
        self.address = address
        self.slots = slots
        self.workers = len(slots)
        self.gpus = sorted({s for s in slots if s is not None})
        # Several jobs per GPU: each Ray task asks for that fraction of one (its speed run still has the
        # GPU to itself: it waits for the GPU's lock on its node, judge.timing.lock).
        self.gpu_share = len(self.gpus) / max(1, len(slots)) if use_gpu else 0.0
        self.use_gpu = use_gpu
        self.timeout = timeout

    def _init(self) -> None:
        import logging

        runtime_env = {"env_vars": {"PYTHONPATH": str(REPO_ROOT)}}
        # A local instance only carries job specs and reports: a small object store is plenty.
        local = {"include_dashboard": False, "object_store_memory": 100 << 20}
        if self.address:
            self.ray.init(
                address=self.address, runtime_env=runtime_env, logging_level=logging.ERROR, log_to_driver=False
            )
        elif self.use_gpu:
            import os

            # The local instance gets exactly the GPUs asked for; Ray hands their host indices to the tasks.
            os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(str(g) for g in self.gpus)
            os.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
            self.ray.init(
                num_cpus=self.workers,
                num_gpus=len(self.gpus),
                runtime_env=runtime_env,
                logging_level=logging.ERROR,
                log_to_driver=False,
                **local,
            )
        else:
            self.ray.init(
                num_cpus=self.workers,
                num_gpus=0,
                runtime_env=runtime_env,
                logging_level=logging.ERROR,
                log_to_driver=False,
                **local,
            )

    def start(self) -> None:
        """Connect to Ray (or start a local instance) now, from the calling thread: the grading service does
        it from its main thread, before its server takes the signals (Ray's own SIGTERM handler would end
        the process without the service's shutdown)."""
        if not self.ray.is_initialized():
            self._init()

    def run(self, jobs: Jobs, on_result: OnResult) -> None:
        ray = self.ray
        self.start()
        self._pending = pending = {}
        try:
            resources = {"num_gpus": self.gpu_share, "num_cpus": 1} if self.use_gpu else {"num_cpus": 1}
            # max_retries=0: a job that killed its Ray worker is an IE for that job, recorded once.
            task = ray.remote(**resources, max_retries=0)(_ray_task)
            source, more = iter(jobs), True
            while more or pending:
                idle = False
                while more:  # Ray queues the tasks itself: hand it every job there is
                    try:
                        item = next(source)
                    except StopIteration:
                        more = False
                        break
                    if item is None:
                        idle = True
                        break
                    key, spec = item
                    spec = dict(spec)
                    if spec.get("source") is None:  # the bytes travel with the task: nodes share no files
                        path = Path(spec["path"])
                        spec["source"] = base64.b64encode(path.read_bytes()).decode()
                        spec["filename"] = path.name
                    pending[task.remote(spec, self.timeout, self.use_gpu)] = key
                if not pending:
                    continue
                done, _ = ray.wait(list(pending), num_returns=1, timeout=0 if idle else None)
                for ref in done:
                    key = pending.pop(ref)
                    try:
                        report = ray.get(ref)
                    except Exception as exc:  # noqa: BLE001 - a dead task is this job's IE
                        report = ie_report(
                            None,
                            f"the Ray task failed: {type(exc).__name__}: "
                            f"{str(exc).strip().splitlines()[0][:200] if str(exc) else ''}",
                        )
                    on_result(key, report)
        finally:
            ray.shutdown()

    def stop(self) -> None:
        """End the tasks in flight now (their reports come back as IEs)."""
        for ref in list(getattr(self, "_pending", {})):
            try:
                self.ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001 - already ended
                pass
