"""`judge bench`: time a file against the reference (and PyTorch) on a problem's bench shapes, and print the
speedups; also the speed run's options, which `submit` takes too."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from judge.cli_common import (
    EXIT_AC,
    EXIT_INTERNAL,
    EXIT_REJECTED,
    check_file,
    device_without_torch,
    err,
    internal_error,
    problem_or_exit,
    progress_option,
    resolve_device,
    sandbox_help,
    sandbox_or_exit,
    usage,
)
from judge.settings import settings
from judge.verdicts import Verdict


def speed_options(fn):
    options = [
        click.option(
            "--ci-target",
            type=float,
            default=None,
            help="Stop timing when the speedup's 95% interval is within +-this (default 0.01: 1%).",
        ),
        click.option(
            "--speed-budget",
            type=float,
            default=None,
            help="Seconds of timed rounds at most (default: the problem's [bench] budget_seconds).",
        ),
        click.option("--max-rounds", type=int, default=None, help="Rounds at most (default 30)."),
        click.option(
            "--plot",
            "plot_path",
            type=click.Path(path_type=Path),
            default=None,
            help="Write a PNG of the speed results here (needs matplotlib: pip install -e '.[plot]').",
        ),
    ]
    for opt in reversed(options):
        fn = opt(fn)
    return fn


def bench_overrides(ci_target, speed_budget, max_rounds, **extra):
    return {"ci_target": ci_target, "budget_seconds": speed_budget, "max_rounds": max_rounds, **extra}


def plot_speed(speed, path):
    if path is not None and speed.get("shapes"):
        from judge.timing.render import plot

        err(plot(speed, path))


@click.command("bench")
@click.argument("problem")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print a JSON report (and nothing else) on stdout.")
@click.option(
    "--device",
    type=click.Choice(["cuda", "cpu"]),
    default=None,
    help="Where to run (default: cuda when a GPU is there; cpu runs the interpreter: no speed claim).",
)
@click.option("--interpret", is_flag=True, help="Run kernels in Triton's interpreter (always so on cpu).")
@click.option("--sandbox", default="auto", show_default=True, help=sandbox_help())
@click.option("--gpu", type=int, default=None, help="Index of the GPU to use (default 0).")
@click.option("--shapes", default=None, help="Only these bench shapes, by index (e.g. 0,2).")
@click.option("--no-pytorch", is_flag=True, help="Do not time the PyTorch baseline.")
@progress_option
@speed_options
def bench_cmd(
    problem,
    file,
    as_json,
    device,
    interpret,
    sandbox,
    gpu,
    shapes,
    no_pytorch,
    progress,
    ci_target,
    speed_budget,
    max_rounds,
    plot_path,
):
    """Time FILE against the reference (and PyTorch) on PROBLEM's bench shapes: speedups with 95% intervals."""
    p = problem_or_exit(problem)
    if p.kind != "kernel":
        usage(f"problem {p.id} ({p.slug}) is answered by hand: there is nothing to time (use submit)")
    if not p.spec.get("bench", {}).get("shapes"):
        usage(f"problem {p.id} ({p.slug}) has no speed part ([bench] shapes): there is nothing to time (use submit)")
    check_file(file)
    sandbox_or_exit(sandbox)
    only = None
    if shapes:
        try:
            only = [int(x) for x in shapes.split(",") if x.strip()]
        except ValueError:
            usage("--shapes takes indices separated by commas, e.g. 0,2")
    from judge.options import Options
    from judge.timing.command import refused

    # As in submit (judge.cli): the command line and the file's source first, without torch.
    early_device, early_interpret = device_without_torch(device, interpret)
    if sandbox != "auto":
        from judge.sandbox import get_backend

        why = get_backend(sandbox).unavailable(early_device)
        if why:
            usage(f"--sandbox {sandbox}: {why}")
    report = refused(p, file, Options(device=early_device, interpret=early_interpret, sandbox=sandbox))
    if report is not None:
        _print_bench(p, file, report, as_json)
        sys.exit(EXIT_REJECTED)

    from judge.progress import NO_PROGRESS, for_terminal

    shown = for_terminal(progress, as_json)
    say = err if shown is NO_PROGRESS else shown.log

    def fail(message):
        shown.close()
        usage(message)

    try:
        with shown.blocking("loading torch"):
            device, interpret, note = resolve_device(device, interpret, fail)
        if note:
            say(note)
        from judge.timing.command import bench

        overrides = bench_overrides(ci_target, speed_budget, max_rounds, only=only)
        if no_pytorch:
            overrides["torch_baseline"] = False
        options = Options(
            device=device, interpret=interpret, sandbox=sandbox, gpu=gpu, bench=overrides, log=say, progress=shown
        )
        report = bench(p, file, options)
    except KeyboardInterrupt:
        shown.close()
        err("interrupted")
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - one line, not a traceback
        shown.close()
        if settings().debug:
            raise
        err(f"{internal_error(exc)} (set JUDGE_DEBUG=1 for the traceback)")
        sys.exit(EXIT_INTERNAL)
    finally:
        shown.close()
    _print_bench(p, file, report, as_json)
    plot_speed(report.get("speed") or {}, plot_path)
    sys.exit(
        EXIT_AC
        if report["verdict"] == Verdict.AC
        else EXIT_INTERNAL
        if report["verdict"] == Verdict.IE
        else EXIT_REJECTED
    )


def _print_bench(p, file, report: dict, as_json: bool) -> None:
    if as_json:
        from judge.report import finite_json

        click.echo(json.dumps(finite_json(report), indent=2, allow_nan=False))
        return
    from rich.console import Console
    from rich.markup import escape

    from judge.timing.render import render_speed

    console = Console(highlight=False, soft_wrap=True)
    console.print(
        f"[bold]Problem {p.id} · {escape(p.title)}[/bold]   {escape(str(file))}  "
        f"[dim]speed run, sandbox {report['mode']['sandbox']}[/dim]"
    )
    render_speed(report.get("speed") or {}, console)
    for n in report.get("notes") or []:
        console.print(f"[yellow]note:[/yellow] {escape(n)}")
    console.print(f"{report['verdict']}: {escape(report['message'])}")


def register(cli: click.Group) -> None:
    cli.add_command(bench_cmd)
