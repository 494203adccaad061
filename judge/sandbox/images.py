"""Building the Docker images the docker backend runs workers in.

``python -m judge sandbox build --kind cpu`` builds ``triton-judge-cpu`` from
sandbox/Dockerfile.cpu on a base image (default ``judge-base:bookworm``, made
without any registry by sandbox/make-base.sh). Wheels are fetched on the host
first (so the build itself needs no network) unless ``--online`` is given; a
CA bundle is copied in for networks that intercept TLS.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from judge.sandbox.docker_engine import IMAGES, client
from judge.sandbox.staging import CODE_ROOT

SANDBOX_DIR = CODE_ROOT / "sandbox"
DEFAULT_BASES = {"cpu": "judge-base:bookworm", "gpu": "nvidia/cuda:12.8.1-runtime-ubuntu24.04"}
# The base image's Python (Debian bookworm: 3.11); wheels are fetched for it.
WHEEL_TARGET = [
    "--python-version",
    "3.11",
    "--implementation",
    "cp",
    "--only-binary=:all:",
    "--platform",
    "manylinux_2_28_x86_64",
    "--platform",
    "manylinux_2_27_x86_64",
    "--platform",
    "manylinux_2_17_x86_64",
    "--platform",
    "manylinux2014_x86_64",
    "--platform",
    "manylinux1_x86_64",
    "--platform",
    "any",
]


def _versions() -> list[str]:
    import torch
    import triton

    return [f"torch=={torch.__version__.split('+')[0]}", f"triton=={triton.__version__}", "numpy"]


def fetch_wheels(dest: Path, log) -> None:
    """The worker's packages, at the judge's own torch and triton versions."""
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--dest", str(dest), *WHEEL_TARGET, *_versions()]
    log(f"fetching wheels: {' '.join(_versions())}")
    subprocess.run(cmd, check=True)


def build(
    kind: str, *, base: str | None, ca_bundle: Path | None, wheels: Path | None, online: bool, tag: str | None, log
) -> str:
    tag = tag or IMAGES["cuda" if kind == "gpu" else "cpu"]
    base = base or DEFAULT_BASES[kind]
    ctx = Path(tempfile.mkdtemp(prefix="judge-image-"))
    try:
        shutil.copy2(SANDBOX_DIR / f"Dockerfile.{kind}", ctx / "Dockerfile")
        context = ctx / "context"
        context.mkdir()
        if ca_bundle is not None:
            shutil.copy2(ca_bundle, context / "ca.crt")
        if wheels is not None:
            shutil.copytree(wheels, context / "wheels")
        elif not online:
            fetch_wheels(context / "wheels", log)
        log(f"building {tag} from {base}")
        image, output = client().images.build(
            path=str(ctx), tag=tag, buildargs={"BASE": base}, rm=True, forcerm=True, pull=False
        )
        for chunk in output:
            line = chunk.get("stream", "").strip()
            if line.startswith(("torch", "Successfully built", "Successfully tagged")):
                log(line)
        return tag
    finally:
        shutil.rmtree(ctx, ignore_errors=True)
