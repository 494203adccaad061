"""What a sandbox mounts: a copy of the worker code, and nothing else of the judge.

A sandboxed worker sees ``judge/__init__.py``, ``judge/shared/`` and
``judge/untrusted/`` (copied into a staging directory mounted read-only), the
submission file (read-only), and its own scratch space. Never the problems,
the reference solutions, the judge's other modules or its results.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

# The directory that holds the ``judge`` package; sandboxes expose only
# judge/__init__.py, judge/shared/ and judge/untrusted/ from it.
CODE_ROOT = Path(__file__).resolve().parents[2]
WORKER_FILES = ("judge/__init__.py",)
WORKER_DIRS = ("judge/shared", "judge/untrusted")


def stage_worker_code(dest: Path) -> Path:
    """Copy the worker's code under ``dest``; returns the directory to put on PYTHONPATH."""
    root = dest / "code"
    for rel in WORKER_FILES:
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(CODE_ROOT / rel, target)
    for rel in WORKER_DIRS:
        shutil.copytree(
            CODE_ROOT / rel, root / rel, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"), dirs_exist_ok=True
        )
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return root


def submission_folder(dest: Path) -> Path:
    """The directory a sandbox mounts read-only as the worker's submission directory: empty until
    place_submission puts the one file in it."""
    folder = dest / "submission"
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)
    return folder


def place_submission(src: Path, folder: Path) -> Path:
    """A private read-only copy of the submission in ``folder`` (the original may change or vanish); the folder
    holds that file alone."""
    if any(folder.iterdir()):
        raise RuntimeError(f"{folder} already holds a submission: a worker serves one submission")
    target = folder / src.name
    tmp = folder / f".{src.name}.part"
    shutil.copyfile(src, tmp)
    tmp.chmod(0o644)
    tmp.rename(target)
    return target


def new_stage(prefix: str) -> tuple[Path, Path, Path]:
    """A fresh staging directory (readable by the sandbox's unprivileged user) holding the worker's code and
    an empty submission directory: (the directory, the code root, the submission directory)."""
    stage = Path(tempfile.mkdtemp(prefix=prefix))
    stage.chmod(0o755)
    return stage, stage_worker_code(stage), submission_folder(stage)
