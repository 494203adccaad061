"""What the grading commands check on their command line alike: the device and its job slots, the worker pool's
size, the rubric and the service's token; each a one-line usage error when wrong."""

from __future__ import annotations

from pathlib import Path

import click

from judge.cli_common import sandbox_help, usage
from judge.settings import settings


def device_and_slots(
    device: str | None, gpus: str | None, jobs: int | None, fallback: bool = False
) -> tuple[str, list[int | None]]:
    """("cpu"|"cuda", slots): JOBS slots per GPU (its host index, repeated), or JOBS interpreter slots on the CPU.

    FALLBACK (``judge serve``): without --device, a host with no GPU judges in the interpreter even when
    --gpus names some (the caller says so), so that one start command works on both kinds of host.

    Several submissions share a GPU: each reserves its memory in the GPU's
    admission (judge.gpu_admission) and waits there for room, their
    correctness cases run side by side, and their speed runs queue for the
    GPU's lock (judge.timing.lock), so timing still has the GPU to itself. The
    defaults: judge.grading.executors.jobs_per_gpu, jobs_on_cpu.
    """
    if jobs is not None and jobs < 1:
        usage("--jobs must be at least 1")
    if gpus is not None:
        try:
            ids = [int(x) for x in gpus.split(",") if x.strip()]
        except ValueError:
            usage(f"--gpus must be GPU indices separated by commas, e.g. 0,1 (got '{gpus}')")
        if not ids or len(set(ids)) != len(ids) or min(ids) < 0:
            usage(f"--gpus must list distinct GPU indices, e.g. 0,1 (got '{gpus}')")
        if device == "cpu":
            usage("--gpus needs the GPU; it cannot go with --device cpu")
    if device is None or device == "cuda":
        import torch

        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if gpus is not None and device is None and not (fallback and count == 0):
            device = "cuda"
        if device is None:
            device = "cuda" if count else "cpu"
        if device == "cuda":
            if count == 0:
                usage("--device cuda: no CUDA GPU is available here; use --device cpu")
            ids = ids if gpus is not None else list(range(count))
            if max(ids) >= count:
                usage(f"--gpus {gpus}: this host has {count} GPU(s) (0-{count - 1})")
            from judge.grading.executors import jobs_per_gpu

            per = jobs or jobs_per_gpu(len(ids))
            return "cuda", [i for i in ids for _ in range(per)]
    from judge.grading.executors import jobs_on_cpu

    return "cpu", [None] * (jobs or jobs_on_cpu())


def pool_size_or_exit(text, executor: str) -> int:
    """--pool's size (judge.pool): warm workers per kind; 0 when off. Ray's tasks run on other hosts' processes:
    no pool there."""
    from judge.pool.server import parse_size

    given = text is not None
    text = text if given else settings().pool
    try:
        size = parse_size(text)
    except ValueError:
        usage(
            f"--pool {text}: give a number of workers (0 or more), auto or off"
            if given
            else f"JUDGE_POOL={text}: give a number of workers (0 or more), auto or off"
        )
    if executor == "ray":
        if given and size > 0:
            usage("--pool works with the local executor only (Ray's tasks start their own workers)")
        return 0
    return size


def rubric_or_exit(path):
    from judge.grading.rubric import RubricError, load_rubric

    try:
        return load_rubric(path)
    except RubricError as exc:
        usage(str(exc))


def staff_token(token_file: Path | None) -> str | None:
    if token_file is not None:
        try:
            return token_file.read_text().strip() or None
        except OSError as exc:
            usage(f"cannot read the token file {token_file}: {exc.strerror}")
    return settings().serve_token


def job_options(command):
    """The options ``grade`` and ``serve`` share: how many jobs at once, in which sandbox, on which executor."""
    for option in reversed(
        [
            click.option(
                "--jobs",
                type=int,
                default=None,
                help="Jobs at once at most: per GPU on a GPU host (default: from its cores; the GPU's memory, "
                "shared with every judge on the host, admits them), else interpreter jobs on the CPU "
                "(default: one per 4 cores).",
            ),
            click.option("--sandbox", default="auto", show_default=True, help=sandbox_help()),
            click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True),
            click.option("--ray-address", default=None, help="An existing Ray cluster (default: start a local one)."),
        ]
    ):
        command = option(command)
    return command


# The worker pool's size, as ``grade`` and ``serve`` take it (pool_size_or_exit reads it).
pool_option = click.option(
    "--pool",
    "pool",
    default=None,
    metavar="N|auto|off",
    help="Warm workers kept per kind (torch and Triton imported, no submission yet), handed to the "
    "jobs, one submission each: auto = as many as one job holds, at most 4; off (or 0): every "
    "job starts its own (default: $JUDGE_POOL, else auto; not with --executor ray).",
)
