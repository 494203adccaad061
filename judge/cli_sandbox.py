"""`judge sandbox status|build`: which sandbox backends can run here, and building the docker backend's images."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from judge.cli_common import EXIT_INTERNAL, err


@click.group()
def sandbox():
    """Sandbox backends: what is available here, and building the Docker images."""


@sandbox.command("status")
@click.option("--device", type=click.Choice(["cuda", "cpu"]), default="cpu", show_default=True)
def sandbox_status(device):
    """Which backends can run here, and what `--sandbox auto` picks."""
    from judge.sandbox import BACKENDS, choose_auto, get_backend

    for name in BACKENDS:
        backend = get_backend(name)
        why = backend.unavailable(device)
        click.echo(f"{name:<8} {'available' if why is None else 'unavailable: ' + why}")
    chosen, note = choose_auto(device)
    click.echo(f"auto     -> {chosen.name}" + (f" ({note})" if note else ""))


@sandbox.command("build")
@click.option("--kind", type=click.Choice(["cpu", "gpu"]), default="cpu", show_default=True)
@click.option("--base", default=None, help="Base image (cpu: judge-base:bookworm from sandbox/make-base.sh).")
@click.option(
    "--ca-bundle",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="CA bundle for pip inside the build (TLS-intercepting networks).",
)
@click.option(
    "--wheels",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Install these wheels instead of fetching them.",
)
@click.option("--online", is_flag=True, help="Let pip inside the build download the packages.")
@click.option("--tag", default=None)
def sandbox_build(kind, base, ca_bundle, wheels, online, tag):
    """Build the worker image for the docker backend."""
    from judge.sandbox.images import build

    try:
        built = build(
            kind,
            base=base,
            ca_bundle=ca_bundle,
            wheels=wheels,
            online=online,
            tag=tag,
            log=lambda m: click.echo(m, err=True),
        )
    except Exception as exc:  # noqa: BLE001 - one line, not a traceback
        err(f"image build failed: {type(exc).__name__}: {str(exc).strip().splitlines()[-1] if str(exc) else ''}")
        sys.exit(EXIT_INTERNAL)
    click.echo(built)


def register(cli: click.Group) -> None:
    cli.add_command(sandbox)
