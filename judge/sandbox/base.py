"""The interface every sandbox backend implements.

A backend starts one worker process for a job and hands back its three pipes;
the judge speaks the protocol over stdin/stdout and drains stderr. Backends
differ only in how much of the machine the worker can see and use.
"""

from __future__ import annotations

import os
import signal
import threading
from dataclasses import dataclass
from pathlib import Path

from judge import kernel_store
from judge.sandbox.staging import place_submission


@dataclass(frozen=True)
class Limits:
    case_seconds: float  # wall clock for one case, first-call compilation included
    run_seconds: float  # wall clock for a whole submission
    memory_mb: int  # host memory of the worker (GPU memory is the device's)
    output_bytes: int  # what the worker may print (stdout and stderr together)
    processes: int  # tasks the worker may hold at once (threads count)
    startup_seconds: float = 120.0  # importing torch, triton and the submission
    scratch_mb: int = 1024  # the worker's private writable space (Triton's cache lives there)
    gpu_memory_mb: int | None = None  # GPU memory the worker may allocate through PyTorch (None: the device's)


@dataclass(frozen=True)
class Job:
    submission: Path | None  # host path of the submission file; None: a pooled worker's, given it later
    scratch: Path  # per-run directory the worker may write
    device: str  # "cuda" or "cpu"
    interpret: bool
    limits: Limits
    gpu: int | None = None  # host index of the GPU assigned to this job
    module: str = "judge.untrusted"  # the worker's entry point (judge.untrusted.replay: the replay check's)
    cache: Path | None = None  # host directory for Triton's compiled kernels, shared by this content's workers

    def cache_inside(self, mounted_at: str) -> str | None:
        """Where a backend that mounts ``cache`` at ``mounted_at`` tells the worker its kernel cache is."""
        return mounted_at if self.cache is not None else None


REPLAY_MODULE = "judge.untrusted.replay"
# Seconds at most the interpreter's replay worker keeps the lowest CPU priority (yields_cores): a bound on
# its wait for a core should the host get busy after it was spawned.
YIELD_SECONDS = 2.0


def yields_cores(job: Job, backend) -> bool:
    """Whether the worker of ``job`` imports torch and Triton at the lowest CPU priority (its "prepare" says so;
    judge.untrusted.replay lowers its own and takes the normal one back once its imports are done, or after
    YIELD_SECONDS at the latest): the interpreter's replay worker, on an idle host.

    In interpreter mode the judge, its case worker and the replay worker all import torch at once (a second
    of a core each), and on 2 cores the third import slows the other two by more than the replays
    themselves cost (docs/measurements: the CPU sessions). Started low, the replay worker imports on what
    the two leave idle. Not on a busy host (a batch of jobs, other work): there it would only wait. Not on a GPU,
    where the replay worker's compiles are what the groups' end waits for, and only where ``backend`` (a
    Backend) declares ``lowers_priority``. Plain
    ``nice`` would weigh nothing: each worker runs in a session of its own, and with the kernel's autogroups
    (sched_autogroup_enabled, on in most distributions) sessions compete as groups, each with its group's
    nice; so the worker sets its session's (/proc/self/autogroup)."""
    return (
        job.module == REPLAY_MODULE
        and bool(job.interpret)
        and getattr(backend, "lowers_priority", False)
        and _idle_cores()
    )


def _idle_cores() -> bool:
    """Whether the runnable tasks now (/proc/stat's procs_running) are at most the cores this process may use
    and two: the judge's own start (its main thread, the case worker importing beside it, the thread
    spawning this one) fills two cores' worth and more. On a busier host a replay worker started low only
    waits, and the whole submit with it."""
    try:
        with open("/proc/stat") as f:
            running = next(int(line.split()[1]) for line in f if line.startswith("procs_running"))
        cores = len(os.sched_getaffinity(0))
    except (OSError, StopIteration, ValueError, IndexError, AttributeError):
        return False
    return running <= cores + 2


class Proc:
    """A running worker. Subclasses fill in how it was started."""

    pid: int
    stdin: int  # write end: requests to the worker
    stdout: int  # read end: replies from the worker
    stderr: int  # read end: whatever the submission prints
    submission_path: str  # the submission's path as the worker sees it ("" until it is placed)
    # Where a sandbox shows the worker its submission: a host directory the sandbox mounts read-only, empty
    # until place() copies the one file in (None: the worker reads the host's path, the process backend).
    submission_dir: Path | None = None
    inside_dir: str = ""  # that directory's path inside the sandbox

    def place(self, submission: Path) -> str:
        """Make ``submission`` (a host path) the one file the worker's submission directory holds, read-only to
        the worker; its path as the worker sees it. A worker spawned without one (a pooled worker, which
        judge.pool starts before the judge knows which submission it will get) is given its file so, on the
        host, just before the judge sends it "setup"."""
        if self.submission_dir is None:
            self.submission_path = str(Path(submission).resolve())
            return self.submission_path
        place_submission(Path(submission), self.submission_dir)
        self.submission_path = f"{self.inside_dir}/{Path(submission).name}"
        return self.submission_path

    def kill(self) -> None:
        raise NotImplementedError

    def wait(self, timeout: float | None = None) -> int | None:
        raise NotImplementedError

    def memory_bytes(self, exact_above: int | None = None) -> int | None:
        """Resident host memory of the worker and its children, if known. With ``exact_above``, a figure
        below it may be an upper bound (cheaper to read; see `process_tree_memory`)."""
        return None

    def oom_killed(self) -> bool:
        return False

    def pids(self) -> set[int]:
        """The host pids of the worker and its descendants, where they can be known: the judge reads their
        open files (judge.kernel_store.unnamed_bytes)."""
        pid = getattr(self, "pid", None)
        if not pid:
            return set()
        try:
            return _descendants(pid)
        except OSError:
            return set()


class Backend:
    """A sandbox. What the judge does differently for one backend than for another, it reads from the
    capabilities below, which every registered backend declares itself (judge.sandbox.backend_class refuses
    one that leaves any to this class's defaults): never from its name."""

    name = "?"
    summary = ""  # a few words for --help and `sandbox status`
    isolated = False  # does this backend contain a hostile submission?
    # spawn() takes ``extra_fds``, ``args`` and ``share`` (below): judge.sandbox.litter can fork several workers
    # of one submission in one sandbox of it.
    litters = False
    # Its worker may lower its own session's CPU priority while it imports, and take it back (yields_cores).
    lowers_priority = False
    # The host user its worker runs as, where that is not the judge's own: its kernel cache is handed to that
    # user, and gets no copies of the judge's trusted C modules (make_cache's ``seed``).
    worker_uid: int | None = None

    def rebuild_args(self, device: str) -> dict:
        """The keyword arguments (JSON values) that make this backend again, as it spawns for ``device``, in
        another process: the worker pool's driver spawns its workers from them (judge.pool.key)."""
        return {}

    def unavailable(self, device: str = "cpu") -> str | None:
        """None when usable here for that device, otherwise a one-line reason."""
        return None

    def caveat(self) -> str | None:
        """What this backend cannot enforce here, for the report's notes."""
        return None

    def spawn(self, job: Job) -> Proc:
        """Start the worker of ``job``. The process and bwrap backends also take ``extra_fds`` (descriptors
        the worker inherits, at the same numbers), ``args`` (the worker module's command-line arguments) and
        ``share`` (how many workers will live in this one sandbox: its memory, processes and scratch are that
        many workers'), which judge.sandbox.litter uses."""
        raise NotImplementedError


CAPABILITIES = ("isolated", "litters", "lowers_priority", "worker_uid")  # what a registered backend declares

INSIDE_CACHE = "/judge/cache"  # where the sandboxes mount Job.cache
HASH_SEED = "0"  # every worker's PYTHONHASHSEED (worker_env)


def make_cache(path: Path, interpret: bool, seed: bool = True) -> None:
    """Make a kernel cache directory; a new one (on a GPU, with ``seed``) gets Triton's C modules from the
    judge's trusted caches (judge.driver_modules), never their kernels. Not for docker's (``seed`` False):
    the copies would be the judge's, and Triton, rebuilding a module that does not load there, could not
    write beside them as the container's user."""
    new = not path.exists()
    path.mkdir(parents=True, exist_ok=True)
    if new and seed and not interpret:
        from judge import driver_modules

        driver_modules.seed(path)


def prepare_cache(job: Job, uid: int | None = None) -> None:
    """Make the kernel cache directory exist, writable by the worker's user and nobody else; a new one gets
    Triton's C modules from the judge's trusted caches (judge.driver_modules).

    ``uid``: the user the worker is on the host, when it is not the judge's own
    (docker's ``nobody``); bwrap's user namespace maps its ``nobody`` to the
    judge's own user, as the process backend runs as it.
    """
    if job.cache is None:
        return
    make_cache(job.cache, job.interpret, seed=uid is None)
    job.cache.chmod(0o700)
    kernel_store.touch(job.cache)  # used now: not pruned while its session runs (judge.kernel_store)
    if os.geteuid() == 0:  # (a directory docker handed to nobody comes back to root for bwrap, and back)
        owner = os.geteuid() if uid is None else uid
        os.chown(job.cache, owner, owner)


def worker_env(job: Job, *, code_root: str, scratch: str, cache: str | None = None) -> dict[str, str]:
    """The whole environment a worker gets: nothing of the judge's leaks in."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": scratch,
        "TMPDIR": scratch,
        "PYTHONPATH": code_root,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "PYTHONSAFEPATH": "1",
        # One hash seed for every worker, the submission's and the replay's: host code that runs where a kernel
        # is compiled or interpreted (a constexpr function iterating a set of strings) computes the same in
        # both, whichever process spawned them (a pool's driver, a job). It is no secret: nothing else hashes.
        "PYTHONHASHSEED": HASH_SEED,
        "LANG": "C.UTF-8",
        # Compiled kernels: in a directory this submission's content alone shares (Job.cache), else scratch.
        "TRITON_CACHE_DIR": cache or os.path.join(scratch, "triton-cache"),
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    # Toolchain locations a GPU host may need; they carry no judge state.
    for key in ("LD_LIBRARY_PATH", "CUDA_HOME", "TRITON_PTXAS_PATH", "TRITON_LIBCUDA_PATH"):
        if key in os.environ:
            env[key] = os.environ[key]
    if job.device == "cuda":
        env["CUDA_VISIBLE_DEVICES"] = str(job.gpu if job.gpu is not None else 0)
        env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    else:
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env


# The host's process table (parent -> children), read once for every watcher of this process. A judge watches each
# of its workers' trees ten times a second (judge.channel's memory watch, the pool's memory op), and each scan
# reads every /proc/PID/stat on the host: with a scan per watcher, that scan was most of a GPU submit's judge
# process (docs/measurements: worker starts). One table serves every watcher for TABLE_SECONDS; a process forked
# since is seen by the next scan.
TABLE_SECONDS = 0.05
_table: tuple[float, dict[int, list[int]]] = (-1.0, {})
_table_lock = threading.Lock()


def _children_table(max_age: float = TABLE_SECONDS) -> dict[int, list[int]]:
    """parent pid -> its children's pids, at most ``max_age`` seconds old."""
    import time

    global _table
    with _table_lock:
        stamp, table = _table
        now = time.monotonic()
        if now - stamp < max_age:
            return table
        table = {}
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    stat = f.read()
            except OSError:
                continue
            after = stat.rsplit(b")", 1)[1].split()
            table.setdefault(int(after[1]), []).append(int(name))
        _table = (time.monotonic(), table)
        return table


def _descendants(root: int, max_age: float = TABLE_SECONDS) -> set[int]:
    children = _children_table(max_age)
    tree, frontier = {root}, [root]
    while frontier:
        for child in children.get(frontier.pop(), ()):
            if child not in tree:
                tree.add(child)
                frontier.append(child)
    return tree


def _pss(pid: int) -> int:
    """Proportional set size: shared pages split among their users, so forked
    children that share their parent's memory are not counted twice."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) << 10
    except OSError:
        pass
    return _rss(pid)


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


def process_tree_memory(root: int, exact_above: int | None = None) -> int | None:
    """Memory of ``root`` and its descendants (PSS where the kernel has it).

    PSS costs: the kernel walks every page table of the process, about 7 ms for one that has imported
    torch, and the watchdog asks ten times a second per worker (on 2 cores that was a tenth of a core
    per worker, taken from the kernels being judged). RSS (statm, 0.02 ms) is never below PSS, so with
    ``exact_above`` given, PSS is read only once the RSS sum reaches it; below, the RSS sum is returned,
    an upper bound that is still below ``exact_above``."""
    try:
        tree = _descendants(root)
        if exact_above is not None:
            rss = sum(_rss(pid) for pid in tree)
            if rss < exact_above:
                return rss
        return sum(_pss(pid) for pid in tree)
    except OSError:
        return None


def signal_name(code: int) -> str:
    try:
        return signal.Signals(code).name
    except ValueError:
        return f"signal {code}"
