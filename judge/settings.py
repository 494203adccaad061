"""The judge's settings from the environment: one frozen object, read once per process.

These are the only ``JUDGE_*`` environment variables the judge reads, and this module is the only place that
reads them. Each is optional: unset (or empty), the default below holds, and the judge behaves as documented
in the guides (docs/staff/settings.md has the same table for users). A value the command line can give too
(``--workers``, ``--pool``, ``--token-file``) wins over the environment's.

The judge reads the environment once, at the first :func:`settings` call, and passes what it hands to its own
children explicitly (a job's workers and pool socket on its command line, a litter's pipes in its argv): a
child process reads its own environment, which it inherits, once too. Tests that change a variable clear the
cache (``settings.cache_clear()``; tests/conftest.py does it around every test).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


class SettingError(ValueError):
    """A setting whose value cannot be used: the message names it and says what is valid (one line)."""


@dataclass(frozen=True)
class Settings:
    # JUDGE_PROBLEMS: the folder of problem packages (default: problems/ beside the judge). A course keeps its
    # own problems there; the references stay in the repository's reference/.
    problems: Path = REPO_ROOT / "problems"
    # JUDGE_CACHE_DIR: the judge's cache root (default ~/.cache/triton-judge): the GPU's measured ceilings,
    # the trusted workers' kernel caches, and one kernel cache per submission content. A root the `process`
    # backend's submissions could write must serve no sandboxed judging (docs/staff/sandboxes.md).
    cache_dir: Path = field(default_factory=lambda: Path.home() / ".cache" / "triton-judge")
    # JUDGE_LOCK_DIR: where the per-GPU timing locks and the GPU memory ledger live (default $XDG_RUNTIME_DIR,
    # else /tmp). Every judge sharing a GPU must see the same folder, or they time beside each other.
    lock_dir: Path = field(default_factory=lambda: Path(os.environ.get("XDG_RUNTIME_DIR") or "/tmp"))
    # JUDGE_WORKERS: the workers one submission's cases are spread over, as `submit --workers` (default:
    # from the host's cores and the GPU's memory, judge.options.auto_workers). Set for `judge grade`, every
    # job gets that many instead of its share of the host.
    workers: int | None = None
    # JUDGE_REPLAY_WORKERS: the replay check's workers per run (default: judge.options.replay_workers, more
    # for a lone submit on a large GPU host, where replays would otherwise lag the test workers).
    replay_workers: int | None = None
    # JUDGE_KERNEL_CACHE_GB: the submissions' kernel caches' total on disk, in GB (default 20); past it the
    # caches used least recently are dropped. 0 keeps only what was used in the last hour. A value that is
    # not a number is ignored (the default holds).
    kernel_cache_gb: float = 20.0
    # JUDGE_SUBMISSION_CACHE_GB: what one worker's kernel cache may take, in GB (default 4): a file that
    # writes more is OLE, so no submission can fill the disk through Triton's cache.
    submission_cache_gb: float = 4.0
    # JUDGE_DOCKER_IMAGE: the image the docker backend runs workers in (default: the judge's own, built by
    # `judge sandbox build`, one for the CPU and one for CUDA).
    docker_image: str | None = None
    # JUDGE_POOL: the default of `judge grade --pool` and `judge serve --pool` (default auto): warm workers
    # kept per kind, a number, auto or off.
    pool: str = "auto"
    # JUDGE_SERVE_TOKEN: the grading service's staff token when no --token-file is given: `judge serve`
    # takes it as the staff's token, and the --forward clients (Gradescope, PrairieLearn) send it.
    serve_token: str | None = None
    # JUDGE_TIMELINE: a file (or an existing folder: a file per process) to write where each command's wall
    # time went, in Chrome's trace-event format (default: none; off, recording costs nothing).
    timeline: str | None = None
    # JUDGE_DEBUG: any non-empty value: an internal error raises with its traceback instead of one line.
    debug: bool = False


def _whole(environ, name: str) -> int | None:
    text = environ.get(name, "")
    if not text:
        return None
    try:
        return max(1, int(text))
    except ValueError:
        raise SettingError(f"{name}={text}: give a whole number of workers (1 or more)") from None


def _gb(environ, name: str, default: float) -> float:
    text = environ.get(name, "").strip()
    try:
        return max(0.0, float(text)) if text else default
    except ValueError:
        return default


def from_environ(environ=None) -> Settings:
    """The settings ``environ`` (default: this process's environment) gives."""
    env = os.environ if environ is None else environ
    default = Settings()
    return Settings(
        problems=Path(env.get("JUDGE_PROBLEMS", default.problems)),
        cache_dir=Path(env.get("JUDGE_CACHE_DIR") or Path.home() / ".cache" / "triton-judge"),
        lock_dir=Path(env.get("JUDGE_LOCK_DIR") or env.get("XDG_RUNTIME_DIR") or "/tmp"),
        workers=_whole(env, "JUDGE_WORKERS"),
        replay_workers=_whole(env, "JUDGE_REPLAY_WORKERS"),
        kernel_cache_gb=_gb(env, "JUDGE_KERNEL_CACHE_GB", default.kernel_cache_gb),
        submission_cache_gb=_gb(env, "JUDGE_SUBMISSION_CACHE_GB", default.submission_cache_gb),
        docker_image=env.get("JUDGE_DOCKER_IMAGE") or None,
        pool=env.get("JUDGE_POOL", default.pool),
        serve_token=env.get("JUDGE_SERVE_TOKEN") or None,
        timeline=env.get("JUDGE_TIMELINE") or None,
        debug=bool(env.get("JUDGE_DEBUG")),
    )


@functools.lru_cache(maxsize=1)
def settings() -> Settings:
    """This process's settings, read from its environment at the first call (SettingError for a bad value)."""
    return from_environ()
