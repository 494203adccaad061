"""How one judging run is set up: the command line's choices, and the limits they give a problem."""

from __future__ import annotations

from dataclasses import dataclass, field

from judge.sandbox import Limits
from judge.verdicts import Verdict


@dataclass
class Options:
    device: str = "cpu"  # where tensors live: "cuda" or "cpu"
    interpret: bool = True  # run kernels in Triton's interpreter
    sandbox: str = "process"
    seed: int = 0
    quick: bool = False  # `judge test`: edge examples and a few drawn cases
    group: str | None = None  # only this group
    case: dict | None = None  # only this case (needs group)
    gpu: int | None = None
    max_examples: int | None = None  # override the spec's per-group count
    shrink_seconds: float = 60.0
    threads: int | None = 1
    limits: dict = field(default_factory=dict)  # overrides of the spec's limits
    static_scan: bool = True  # reject tampering found in the source (off only to test the sandboxes)
    speed: bool = True  # measure speed after every group passed (GPU only; submit --no-speed turns it off)
    replay: bool = True  # the replay check (judge.replay); off only in tests that show what it alone catches
    bench: dict = field(default_factory=dict)  # overrides of the problem's [bench] settings
    log: object = None  # callable(str) for progress lines on stderr (the GPU lock's wait), or None
    workers: int | None = None  # workers a submission's cases are spread over (None: judge.options.auto_workers)
    progress: object = (
        None  # judge.progress.Progress: live progress of the run (None: none, judge.progress.NO_PROGRESS)
    )
    # Spawn the speed run's workers (and warm up ahead) when the session starts, not once its first group has
    # passed: for a lone `submit` on a GPU (judge.cli), where the machine has nothing else to do.
    speed_early: bool = False


def limits_for(problem, options: Options) -> Limits:
    """The problem's [limits], with the command line's overrides, for this mode (interpreter or GPU)."""
    spec = dict(problem.limits)
    spec.update({k: v for k, v in options.limits.items() if v is not None})
    interp = options.interpret
    return Limits(
        case_seconds=float(
            spec.get("case_seconds_interpret" if interp else "case_seconds", spec.get("case_seconds", 60))
        ),
        run_seconds=float(spec.get("run_seconds_interpret" if interp else "run_seconds", spec.get("run_seconds", 900))),
        memory_mb=int(spec.get("memory_mb", 8192)),
        output_bytes=int(spec.get("output_kb", 1024)) << 10,
        processes=int(spec.get("processes", 256)),
        startup_seconds=float(spec.get("startup_seconds", 60)),
        gpu_memory_mb=int(spec.get("gpu_memory_mb") or GPU_MEMORY_MB),
    )


# What one worker may allocate through PyTorch on a GPU unless the problem says otherwise (its [limits]
# gpu_memory_mb); a worker that goes over is MLE for its job. It is also what the judge reserves per process in
# the GPU's admission (judge.gpu_budget), so it sets how many judges share a GPU: it is sized for the largest
# correctness case of the problems here (well under 1 GB), with room for the file's own scratch and Triton's
# autotuning buffers, not for the device. A problem whose cases are bigger says so in its [limits].
GPU_MEMORY_MB = 2 << 10
# The most workers one submission's cases are spread over on a GPU.
MAX_GPU_WORKERS = 12


def auto_workers(device: str, interpret: bool, gpu_gib: float | None = None, gpu_memory_mb: int = GPU_MEMORY_MB) -> int:
    """How many workers to spread one submission's correctness cases over, from this host.

    Each worker is a process with its own copy of torch (about 0.5 GB of host
    memory) and, on a GPU, its own CUDA context (about 0.5 GB of device memory
    before any tensor); the judge computes its golden answers in a thread per
    worker. In the interpreter every worker keeps a core busy, so one per core
    but one, which the judge's own work needs (Hypothesis, the golden models,
    the replay worker's start), at most 4: on 2 cores one worker judges faster than two
    (docs/measurements: the CPU sessions). On a GPU a worker's case is mostly its kernels' compiles,
    which run on the host's cores (Triton's LLVM passes and ptxas: most of each lane's time for 98's
    reference), so one per core but four (the judge's own process, its golden answers and checks, and the ptxas children), at most
    MAX_GPU_WORKERS, and no more than one per ``gpu_memory_mb`` (the problem's per-worker cap) of the
    device's memory. The ``workers`` setting (judge.settings: JUDGE_WORKERS) overrides it. ``gpu_gib``: the
    device's memory when already known (judge.pool.head_start reads it without torch, from nvidia-smi).
    """
    import os

    from judge.settings import settings

    if settings().workers:
        return settings().workers
    cores = os.cpu_count() or 1
    if interpret or device != "cuda":
        return max(1, min(cores - 1, 4))
    gb = gpu_gib
    if gb is None:
        try:
            import torch

            gb = torch.cuda.get_device_properties(0).total_memory / 2**30
        except Exception:  # noqa: BLE001 - no GPU visible: one worker
            return 1
    return max(1, min(MAX_GPU_WORKERS, cores - 4, int(gb * 1024 // max(1, gpu_memory_mb))))


def no_speed_run(problem, opts: Options, verdict=None) -> str | None:
    """Why this run measures no speed, or None when it does (``verdict``: the tests', a Verdict; None: before
    them, as if they passed)."""
    if problem.speed_points <= 0:
        return "this problem has no speed points"
    if opts.quick:
        return "not measured by a quick test: submit measures it"
    if opts.interpret or opts.device != "cuda":
        return (
            "speed is not scored in interpreter mode: kernels run one program at a time on the CPU, so their "
            "times say nothing about a GPU (submit on a machine with a GPU to score it)"
        )
    if not opts.speed:
        return "not measured (--no-speed)"
    if opts.group is not None or opts.case is not None:
        return "not measured: only part of the tests ran (--group/--case)"
    if verdict is not None and verdict is not Verdict.AC:
        return "no speed points without correctness: not every test group passed"
    return None


def replay_workers(device: str, interpret: bool, lone: bool) -> int:
    """Replay workers for one run: for a lone submit on a GPU (its host's cores are its own) three on a host of
    12 cores or more, else two; one otherwise (``judge grade`` runs several jobs per GPU, each with its own).
    The ``replay_workers`` setting (judge.settings: JUDGE_REPLAY_WORKERS) overrides it.

    Why three: each replay compiles the file's kernels for its case before it runs (1-4 s a replay for
    flash-backward), so two replay workers fall behind 98's twelve test workers and its groups wait seconds
    for their last replays after the tests; with three the wait is gone, and four are no better
    (docs/measurements: the GPU sessions)."""
    import os

    from judge.settings import settings

    if settings().replay_workers:
        return settings().replay_workers
    if device == "cuda" and not interpret and lone:
        return 3 if (os.cpu_count() or 1) >= 12 else 2
    return 1


def planned_cases(group, options: Options) -> int:
    """How many cases Hypothesis is asked for in ``group`` (its explicit examples come on top)."""
    n = (
        options.max_examples
        if options.max_examples is not None
        else (group.max_examples_interpret if options.interpret else group.max_examples)
    )
    return min(n, 2) if options.quick else n


def session_workers(problem, options: Options, gpu_gib: float | None = None) -> int:
    """How many workers a submission's session spreads its cases over: one for a single case, else
    ``--workers`` or auto_workers, and no more than the largest selected group has cases (a second worker
    for one case is a start for nothing)."""
    if options.case is not None:
        return 1
    count = options.workers or auto_workers(
        options.device, options.interpret, gpu_gib, limits_for(problem, options).gpu_memory_mb
    )
    groups = [g for g in problem.groups if options.group is None or g.name == options.group]
    return max(1, min(count, max([planned_cases(g, options) + len(g.examples) for g in groups] or [1])))


def torch_index(gpu: int | None) -> int:
    """This process's torch index of host GPU ``gpu`` (the index the sandboxes and the GPU lock use).

    A grading job sees only its GPU (CUDA_VISIBLE_DEVICES=<its host index>, judge.grading.job), where it is
    torch's cuda:0; elsewhere the host index is torch's.
    """
    import os

    gpu = gpu or 0
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    return visible.index(str(gpu)) if str(gpu) in visible else gpu


def torch_device(gpu: int | None) -> str:
    return f"cuda:{torch_index(gpu)}"
