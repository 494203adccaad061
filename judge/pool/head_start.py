"""``submit``'s head start: a pool of the command's own, whose workers import torch while the judge does."""

from __future__ import annotations

import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from judge.pool.client import serving, use
from judge.pool.key import key_of
from judge.pool.server import PoolServer
from judge.sandbox.base import REPLAY_MODULE, Job

SPAWN_WAIT_SECONDS = 5.0  # head_start's wait for its spawns before the judge imports torch (they take ~0.05 s each)


def head_start(problem, submission: Path, options) -> PoolServer | None:
    """Workers for one ``submit``, spawned before the judge imports torch.

    A worker's start is torch and Triton imported in a fresh process (on a GPU also its CUDA context); the
    judge's own process imports torch too before its session asks for a worker. Both can run at once: a pool
    of this command's own, holding the workers the session will ask for (its parallel workers and its replay
    worker), warmed now and drained at once (no replacements), hands them over when the session asks. The
    job is known without torch: on a GPU the device's memory, which sets how many workers, is read with
    nvidia-smi (judge.cli_common.gpu_memory_gib). A worker the session asks for and the pool lacks (a count
    that came out otherwise with torch) it starts itself; one warmed and never taken is killed at the end.
    None when there is nothing to gain or it cannot be had (an outer pool already serves this process, a
    sandbox the pool cannot rebuild, no Unix socket, a GPU whose memory cannot be read): the session then
    starts its own, as always.
    """
    from judge import intake
    from judge.options import limits_for, session_workers
    from judge.settings import settings

    if serving() or options.device not in ("cpu", "cuda") or getattr(problem, "kind", "kernel") != "kernel":
        return None
    gpu_gib = None
    if options.device == "cuda" and not options.workers and not settings().workers:
        from judge.cli_common import gpu_memory_gib

        gpu_gib = gpu_memory_gib(options.gpu)
        if gpu_gib is None:
            return None
    try:
        backend, _ = intake.backend_for(options.sandbox, options.device)
    except Exception:  # noqa: BLE001 - the session says why, as it would without this
        return None
    job = Job(
        submission=submission,
        scratch=Path(tempfile.gettempdir()),
        device=options.device,
        interpret=options.interpret,
        limits=limits_for(problem, options),
        gpu=options.gpu,
        cache=intake.kernel_cache(submission, options.device, options.interpret),
    )
    if key_of(backend, job) is None:
        return None
    count = session_workers(problem, options, gpu_gib)  # as many as the session will ask for
    if options.device == "cuda":
        # On a GPU their memory first (judge.gpu_admission), at once or never: a head start waits for no one,
        # and its workers' CUDA contexts must not come before another judge's promise. The session takes it.
        from judge.gpu_claim import GpuClaim, Refused, hand_over
        from judge.options import no_speed_run, replay_workers

        replays = replay_workers(options.device, options.interpret, lone=True) if options.replay else 0
        claim = GpuClaim(options, job.limits, speed=no_speed_run(problem, options) is None, speed_replays=replays)
        try:
            count = claim.start(count, replays, block=False)
        except Refused:
            return None  # (the session says so)
        if claim.on and not count:
            return None
        hand_over(claim)
    try:
        # What goes wrong in it (a litter whose parent failed, a spawn that failed) is said on stderr: the
        # session then starts those workers itself, and the command is only slower.
        server = PoolServer(size=max(count, 1), log=lambda line: print(f"judge: {line}", file=sys.stderr))
    except OSError:
        return None
    # They are this file's alone, so they mount its content cache itself, as the session's own workers would:
    # a kernel variant one of them compiles is there for the others, and two that need it at once compile it
    # once (judge.untrusted.compile_lock) instead of once each in caches of their own (the first wave of
    # cases: about twice as many compiles as variants for 98's reference, without it). The replay worker
    # keeps a cache of its own (judge.replay). They are forked as a litter (judge.sandbox.litter).
    server.warm(backend, job, n=count, own_cache=True, litter=True)
    if options.replay:
        server.warm(backend, replace(job, module=REPLAY_MODULE))
    server.drain()
    # The judge's torch import waits for the spawns (wait_spawned says why).
    server.wait_spawned(timeout=SPAWN_WAIT_SECONDS)
    use(server.path)
    return server


def end_head_start(server: PoolServer | None) -> None:
    from judge.gpu_claim import drop_handed

    drop_handed()  # (a claim no session took: the command failed before its session)
    if server is not None:
        use(None)
        server.close()
