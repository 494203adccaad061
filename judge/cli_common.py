"""What every command of the CLI shares: exit codes, one-line errors, looking up a problem, checking a file.

Exit codes: 0 accepted (or done); 1 judged and not accepted; 2 usage error
(unknown problem, missing file, bad option: one line says what is valid); 3
internal error of the judge. Every error is one line on stderr, never a
traceback. Nothing here imports torch, so a usage error answers at once.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

EXIT_AC, EXIT_REJECTED, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


def err(message: str) -> None:
    click.echo(f"judge: {message}", err=True)


def leave(code: int):
    """End a judging command with ``code`` once its report is out, without the interpreter's teardown.

    By then the workers have been ended and the scratch folders removed (judge.session, judge.pool), and
    nothing but daemon threads is left; what the teardown would still do is free torch's and every module's
    objects one by one, a noticeable part of a short ``submit`` (docs/measurements: the CPU sessions).
    """
    import os

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed or broken pipe: nothing more can be said on it
            pass
    os._exit(code)


def usage(message: str):
    """A usage error: one line, exit 2."""
    err(message)
    sys.exit(EXIT_USAGE)


def judge_frame(exc: BaseException) -> str:
    """Where in the judge's own code ``exc`` was raised (its innermost frame there, e.g. "judge/checker.py:140
    in _compare"), or "": an internal error's one line says where, with no traceback to read (a grading job's
    stderr becomes its report's message)."""
    import traceback
    from pathlib import Path

    root = Path(__file__).resolve().parent
    where = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        path = Path(frame.filename).resolve()
        if path.is_relative_to(root):
            where = f"{path.relative_to(root.parent)}:{frame.lineno} in {frame.name}"
    return where


def internal_error(exc: BaseException) -> str:
    """An internal error's one line: "internal error at judge/x.py:12 in f: Type: message" (the frame where known)."""
    at = judge_frame(exc)
    return f"internal error{f' at {at}' if at else ''}: {type(exc).__name__}: {exc}"


def internal(message: str):
    """An error of the judge's: one line, exit 3."""
    err(f"internal error: {message}")
    sys.exit(EXIT_INTERNAL)


def problem_or_exit(key: str):
    """The problem with this id, zero-padded id or slug; a usage error naming the valid ones otherwise."""
    from judge.problems import ProblemError, find_problem, valid_keys

    try:
        problem = find_problem(key)
        if problem is None:
            usage(f"unknown problem '{key}'; valid: {valid_keys()}")
    except ProblemError as exc:
        internal(f"a problem directory is malformed: {exc}")
    return problem


def check_file(file: Path) -> None:
    try:
        if not file.exists():
            usage(f"no such file: {file}")
        if file.is_dir():
            usage(f"{file} is a directory; give the submission's .py file")
    except OSError as exc:  # a name too long for the file system, say
        usage(f"cannot use {file}: {exc.strerror or exc}")


def write_new_file(path: Path, text: str, *, force: bool = False) -> None:
    """Write ``text`` to ``path`` in a folder that exists (none is made: a mistyped folder is a usage error,
    not a new tree); an existing file only with ``force``. Every refusal is a usage error's one line."""
    try:
        if not path.parent.is_dir():
            usage(f"no such folder: {path.parent} (make it first, or name a file in a folder that exists)")
        if path.exists() and not force:
            usage(f"{path} exists; pass --force to overwrite it")
        path.write_text(text)
    except OSError as exc:
        usage(f"cannot write {path}: {exc.strerror or exc}")


def output_folder(path: Path, what: str) -> Path:
    """Make the folder an output goes into, with its parents; a usage error's one line when the file system
    refuses (a file in the way, no permission)."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        usage(f"cannot write {what} into {path}: it is not a folder")
    except OSError as exc:
        usage(f"cannot write {what} into {path}: {exc.strerror or exc}")
    return path


def named_on_command_line(filename, argv: list[str]) -> bool:
    """Whether ``filename`` (an OSError's) is a path the command line gave, or lies inside one."""
    if filename is None:
        return False
    name = Path(str(filename))
    for arg in argv:
        value = arg.split("=", 1)[1] if arg.startswith("--") and "=" in arg else arg
        if not value or value.startswith("-"):
            continue
        given = Path(value)
        if name == given or given in name.parents:
            return True
    return False


def sandbox_or_exit(name: str) -> str:
    from judge.sandbox import backend_names

    if name not in backend_names():
        usage(f"unknown sandbox '{name}'; valid: {', '.join(backend_names())}")
    return name


progress_option = click.option(
    "--progress/--no-progress",
    "progress",
    default=None,
    help="Live progress on stderr (default: on when stderr is a terminal and without --json).",
)


def sandbox_help() -> str:
    from judge.sandbox import describe

    return describe()


def gpu_visible() -> bool:
    """Whether an NVIDIA GPU is visible to this process, found without importing torch: the driver's
    /proc/driver/nvidia/gpus, else ``nvidia-smi -L``; CUDA_VISIBLE_DEVICES set to nothing (or -1) hides them,
    as it does from torch."""
    import os
    import shutil
    import subprocess

    hidden = os.environ.get("CUDA_VISIBLE_DEVICES")
    if hidden is not None and hidden.strip() in ("", "-1"):
        return False
    gpus = Path("/proc/driver/nvidia/gpus")
    try:
        if gpus.is_dir() and any(gpus.iterdir()):
            return True
    except OSError:
        pass
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    try:
        probe = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=2.0)
    except (OSError, subprocess.SubprocessError):
        return False
    return probe.returncode == 0 and "GPU " in probe.stdout


def gpu_memory_gib(gpu: int | None, which: str = "total") -> float | None:
    """The memory of the GPU that torch will call cuda:0 in this process, in GiB, read with ``nvidia-smi``
    (no torch): host GPU ``gpu``, else the first of CUDA_VISIBLE_DEVICES, else 0. None when that cannot be
    told (no nvidia-smi, a CUDA_VISIBLE_DEVICES of UUIDs). ``which``: "total", or "free" now."""
    import os
    import shutil
    import subprocess

    smi = shutil.which("nvidia-smi")
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    index = gpu if gpu is not None else (visible[0] if visible else 0)
    if smi is None or not str(index).isdigit():
        return None
    try:
        probe = subprocess.run(
            [smi, f"--query-gpu=memory.{which}", "--format=csv,noheader,nounits", "-i", str(index)],
            capture_output=True,
            text=True,
            timeout=5.0,
        )
        return float(probe.stdout.strip().splitlines()[0]) / 1024 if probe.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def torch_has_cuda() -> bool | None:
    """Whether the installed torch is a CUDA build, read from its torch/version.py on sys.path without importing
    it (None when that cannot be told)."""
    import re

    for entry in sys.path:
        try:
            text = (Path(entry or ".") / "torch" / "version.py").read_text()
        except OSError:
            continue
        found = re.search(r"^cuda\s*(?::[^=]*)?=\s*(.+)$", text, re.M)
        return None if found is None else found.group(1).strip() not in ("None", "''", '""')
    return None


def device_without_torch(device: str | None, interpret: bool) -> tuple[str, bool]:
    """(device, interpret) as the run will pick them, decided without importing torch (so that a usage error
    or a refused file is answered at once): ``--device`` when given, else ``cuda`` when an NVIDIA GPU is
    visible and torch is a CUDA build, else ``cpu`` (Triton's interpreter). ``--device cuda`` where neither
    is there is a usage error here; the full run checks again with torch (resolve_device)."""
    if device is None:
        device = "cuda" if gpu_visible() and torch_has_cuda() is not False else "cpu"
    elif device == "cuda" and not gpu_visible() and torch_has_cuda() is False:
        usage("--device cuda: no CUDA GPU is available here; use --device cpu")
    return device, (True if device == "cpu" else interpret)


def resolve_device(device, interpret, fail=usage):
    """(device, interpret, note) - the default is the GPU when one is there; asks torch, which the run needs anyway."""
    import torch

    has_cuda = torch.cuda.is_available()
    if device is None:
        device = "cuda" if has_cuda else "cpu"
        if not has_cuda:
            return (
                device,
                True,
                (
                    "no CUDA GPU found: running kernels in Triton's interpreter on the CPU "
                    "(slow, small shapes, bfloat16 skipped)"
                ),
            )
    if device == "cuda" and not has_cuda:
        fail("--device cuda: no CUDA GPU is available here; use --device cpu")
    if device == "cpu":
        return device, True, "running kernels in Triton's interpreter on the CPU" if not interpret else None
    return device, interpret, None
