"""Command line: ``python -m judge list|show|init|submit|test`` (and grade, gradescope, prairielearn, serve).

Exit codes: 0 accepted; 1 judged and not accepted; 2 usage error (unknown
problem, missing file, bad option); 3 internal error of the judge. Every
error is one line on stderr; with --json, stdout holds the report and nothing
else.

``submit``, ``test`` and ``bench`` answer what needs no worker before torch is
imported (it takes seconds, tens of seconds on a busy machine): usage errors,
and a file refused from its source alone (CE: not Python, a syntax error, no
entry point or the wrong arity; RJ: the static scan). See ``_run``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import click

from judge import timeline
from judge.cli_bench import bench_overrides, plot_speed, speed_options
from judge.cli_bench import register as register_bench
from judge.cli_common import (
    EXIT_AC,
    EXIT_INTERNAL,
    EXIT_REJECTED,
    EXIT_USAGE,
    check_file,
    device_without_torch,
    err,
    internal_error,
    leave,
    named_on_command_line,
    problem_or_exit,
    progress_option,
    resolve_device,
    sandbox_help,
    sandbox_or_exit,
    usage,
    write_new_file,
)
from judge.cli_corpus import register as register_corpus
from judge.cli_sandbox import register as register_sandbox
from judge.grading.cli import register as register_grading
from judge.settings import SettingError, settings


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="triton-judge", message="%(version)s")
def cli():
    """Judge Triton kernel exercises: correctness by property tests against a float64 golden model."""


@cli.command("list")
def list_cmd():
    """List the problems."""
    from judge.problems import all_problems

    for p in all_problems():
        click.echo(f"{p.id:>4}  {p.slug:<26} {p.title:<34} {p.signature}")


@cli.command()
@click.argument("problem")
def show(problem):
    """Print a problem's statement."""
    from rich.console import Console
    from rich.markdown import Markdown

    p = problem_or_exit(problem)
    Console().print(Markdown(p.statement_path.read_text()))


@cli.command()
@click.argument("problem")
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option("--force", is_flag=True, help="Overwrite PATH if it exists.")
def init(problem, path, force):
    """Write a problem's skeleton to PATH (default: ./<slug>.py, or ./<slug>.toml for an answers problem)."""
    p = problem_or_exit(problem)
    path = path or Path(f"{p.slug.replace('-', '_')}{p.suffix}")
    if path.is_dir():
        path = path / f"{p.slug.replace('-', '_')}{p.suffix}"
    write_new_file(path, p.skeleton_path.read_text(), force=force)
    click.echo(
        f"wrote {path}: fill in the {'kernel' if p.kind == 'kernel' else 'answers'}, then run: "
        f"python -m judge submit {p.id} {path}"
    )


def _judge_options(fn):
    options = [
        click.option("--json", "as_json", is_flag=True, help="Print a JSON report (and nothing else) on stdout."),
        click.option("--seed", type=int, default=None, help="Seed for the drawn cases (default: random)."),
        click.option(
            "--device",
            type=click.Choice(["cuda", "cpu"]),
            default=None,
            help="Where tensors live (default: cuda when a GPU is there, else cpu).",
        ),
        click.option("--interpret", is_flag=True, help="Run kernels in Triton's interpreter (always so on cpu)."),
        click.option("--sandbox", default="auto", show_default=True, help=sandbox_help()),
        click.option("--group", default=None, help="Run only this test group."),
        click.option("--case", "case_json", default=None, help="Run only this case (JSON from a report)."),
        click.option("--gpu", type=int, default=None, help="Index of the GPU to use (default 0)."),
        click.option("--max-examples", type=int, default=None, help="Drawn cases per group (default: the spec's)."),
        click.option(
            "--workers",
            type=click.IntRange(1, 64),
            default=None,
            help="Workers one submission's cases are spread over (default: from the host's cores and "
            "GPU memory; 1 in the interpreter on one core).",
        ),
        click.option("--time-limit", type=float, default=None, help="Seconds per case (overrides the spec)."),
        click.option("--memory-limit", type=int, default=None, help="MiB of host memory (overrides the spec)."),
        click.option(
            "--startup-limit",
            type=float,
            default=None,
            help="Seconds to import torch, triton and the submission (overrides the spec).",
        ),
        click.option("--run-limit", type=float, default=None, help="Seconds for the whole run (overrides the spec)."),
        click.option(
            "--output-limit", type=int, default=None, help="KiB the submission may print (overrides the spec)."
        ),
        click.option(
            "--processes",
            type=int,
            default=None,
            help="Processes and threads the worker may hold (sandboxes; overrides the spec).",
        ),
        progress_option,
        click.option(
            "--save-case",
            "save_case",
            type=click.Path(path_type=Path),
            default=None,
            metavar="DIR",
            help="Write the first failing group's (shrunk) case to DIR as a .pt file: its inputs in their "
            "exact layout and the expected outputs (the report prints a loader).",
        ),
    ]
    for opt in reversed(options):
        fn = opt(fn)
    return fn


def _run(
    problem,
    file,
    *,
    quick,
    as_json,
    seed,
    device,
    interpret,
    sandbox,
    group,
    case_json,
    gpu,
    max_examples,
    workers,
    time_limit,
    memory_limit,
    startup_limit,
    run_limit,
    output_limit,
    processes,
    progress=None,
    save_case=None,
    speed=True,
    bench=None,
    plot_path=None,
):
    # First everything that needs neither torch nor a worker: the command line, then the file's source. A
    # usage error or a refused file is answered here, in well under a second (tests/bench/instant_errors.py).
    p = problem_or_exit(problem)
    check_file(file)
    sandbox_or_exit(sandbox)
    case = None
    if case_json is not None:
        try:
            case = json.loads(case_json)
        except json.JSONDecodeError as exc:
            usage(f"--case is not valid JSON: {exc.msg}")
        if not isinstance(case, dict):
            usage("--case must be a JSON object")
        if group is None:
            usage("--case needs --group (the reproduce line in a report has both)")
    if group is not None and group not in [g.name for g in p.groups]:
        usage(f"unknown group '{group}' for problem {p.id}; valid: {', '.join(g.name for g in p.groups)}")
    if save_case is not None:
        if p.kind != "kernel":
            usage(f"--save-case: problem {p.id} ({p.slug}) is answered by hand: it has no cases to save")
        if save_case.exists() and not save_case.is_dir():
            usage(f"--save-case: {save_case} is a file; give a directory (it is created if missing)")
    asked_device, asked_interpret = device, interpret
    device, interpret = device_without_torch(device, interpret) if p.kind == "kernel" else ("cpu", False)
    if sandbox != "auto":
        from judge.sandbox import get_backend

        why = get_backend(sandbox).unavailable(device)
        if why:
            usage(f"--sandbox {sandbox}: {why}")
    _check_case(p, group, case, interpret)
    if seed is None:
        seed = int.from_bytes(os.urandom(4), "big") >> 1
    started = time.monotonic()
    if p.kind == "kernel":
        from judge.intake import check_source, refused_report

        refusal = check_source(file, entry=p.entry_point, arity=p.entry_arity, allow=p.scan_allow)
        if refusal is not None:
            # Nothing ran, in no sandbox: the report names the one asked for ("none" for auto).
            mode = {
                "device": device,
                "interpret": interpret,
                "sandbox": sandbox if sandbox != "auto" else "none",
                "quick": quick,
            }
            groups = [g for g in p.groups if group is None or g.name == group]
            report = refused_report(
                p, file, refusal, groups=groups, mode=mode, seed=seed, elapsed=time.monotonic() - started
            )
            _print_report(report, as_json)
            sys.exit(EXIT_REJECTED)

    from judge.progress import NO_PROGRESS, for_terminal

    shown = for_terminal(progress, as_json) if p.kind == "kernel" else NO_PROGRESS
    say = err if shown is NO_PROGRESS else shown.log

    def fail(message):
        shown.close()
        usage(message)

    from judge.options import Options

    def options_for(device, interpret, **extra):
        return Options(
            device=device,
            interpret=interpret,
            sandbox=sandbox,
            seed=seed,
            quick=quick,
            group=group,
            case=case,
            gpu=gpu,
            max_examples=max_examples,
            workers=workers,
            limits={
                "case_seconds": time_limit,
                "case_seconds_interpret": time_limit,
                "memory_mb": memory_limit,
                "startup_seconds": startup_limit,
                "run_seconds": run_limit,
                "run_seconds_interpret": run_limit,
                "output_kb": output_limit,
                "processes": processes,
            },
            speed=speed,
            bench=bench or {},
            **extra,
        )

    early = None
    timeline.start()  # JUDGE_TIMELINE: where this command's time goes (judge.timeline)
    command: dict = {}  # the command's own seconds before the session (into the report's timing)
    try:
        if p.kind == "kernel":
            # The session's workers start importing torch and Triton now, while this process does the same
            # (judge.pool.head_start): on 2 cores that is most of a worker's start off the wait, and on a GPU
            # the workers' CUDA contexts are made meanwhile too.
            from judge.pool.head_start import head_start

            early = head_start(p, file, options_for(device, interpret))
            t_torch = time.monotonic()
            with shown.blocking("loading torch"), timeline.span("import torch (the judge)"):
                resolved = resolve_device(asked_device, asked_interpret, fail)
            command["command_torch_seconds"] = round(time.monotonic() - t_torch, 3)
            if resolved[:2] != (device, interpret):
                device, interpret = resolved[:2]
                _check_case(p, group, case, interpret, fail)
            if resolved[2]:
                say(resolved[2])

        from judge.judging import judge_file

        # A lone submit on a GPU (its own head start: no pool of a batch's) has the machine to itself: its speed
        # run's workers start with the session, not after the first group.
        speed_early = early is not None and device == "cuda" and not interpret
        options = options_for(device, interpret, log=say, progress=shown, speed_early=speed_early)
        before = timeline.process_age()
        report = judge_file(p, file, options)
        if before is not None and report is not None:
            # Where a command's time goes before its session: the python start and the imports (the part
            # of the wall time that elapsed_seconds leaves out, less the exit).
            report.timing.update(command, command_start_seconds=round(before, 3))
        if save_case is not None:
            shown.stage("saving the failing case")
            from judge.savecase import save_failing_case

            save_failing_case(p, report, save_case, device=device)
    except KeyboardInterrupt:
        shown.close()
        err("interrupted")
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - any bug of ours is IE, reported in one line
        shown.close()
        if settings().debug:
            raise
        message = f"{type(exc).__name__}: {exc}"
        if as_json:
            from judge.verdicts import Verdict

            click.echo(
                json.dumps(
                    {
                        "version": 1,
                        "verdict": Verdict.IE.value,
                        "score": 0,
                        "problem": {"id": p.id, "slug": p.slug},
                        "message": message,
                    }
                )
            )
        err(f"internal error: {message} (set JUDGE_DEBUG=1 for the traceback)")
        sys.exit(EXIT_INTERNAL)
    finally:
        shown.close()
        if early is not None:
            from judge.pool.head_start import end_head_start

            end_head_start(early)
        timeline.write()
    _print_report(report, as_json)
    plot_speed(report.speed, plot_path)
    from judge.verdicts import Verdict

    leave(EXIT_AC if report.verdict is Verdict.AC else EXIT_INTERNAL if report.verdict is Verdict.IE else EXIT_REJECTED)


def _check_case(p, group, case, interpret, fail=usage):
    """A usage error when ``--case`` does not fit its group's domain in this mode."""
    if case is None:
        return
    from judge.cases import validate_case

    chosen = next(g for g in p.groups if g.name == group)
    why = validate_case(case, chosen.domain(interpret))
    if why:
        fail(f"--case does not fit group {group}: {why}")


def _print_report(report, as_json: bool) -> None:
    """The report on stdout: JSON, or the rich view (neither imports torch)."""
    if as_json:
        from judge.report import to_json

        click.echo(to_json(report))
    else:
        from rich.console import Console

        from judge.report import render

        render(report, Console(highlight=False, soft_wrap=True))


@cli.command()
@click.argument("problem")
@click.argument("file", type=click.Path(path_type=Path))
@_judge_options
@click.option("--no-speed", is_flag=True, help="Skip the speed run (on a GPU it follows the tests).")
@click.option(
    "--pytorch",
    "with_pytorch",
    is_flag=True,
    help="Time the PyTorch baseline in the speed run too (no points; `judge bench` always does).",
)
@speed_options
@click.option(
    "--pool-socket",
    hidden=True,
    default=None,
    help="Take the workers from this worker pool (selftest --jobs N --pool gives its children its own).",
)
def submit(problem, file, no_speed, with_pytorch, ci_target, speed_budget, max_rounds, plot_path, pool_socket, **kw):
    """Judge FILE for PROBLEM (id or slug): every test group, then speed on a GPU; a verdict and a score."""
    if pool_socket:
        from judge.pool.client import use

        use(pool_socket)
    _run(
        problem,
        file,
        quick=False,
        speed=not no_speed,
        plot_path=plot_path,
        bench=bench_overrides(ci_target, speed_budget, max_rounds, torch_baseline=True if with_pytorch else None),
        **kw,
    )


@cli.command()
@click.argument("problem")
@click.argument("file", type=click.Path(path_type=Path))
@_judge_options
def test(problem, file, **kw):
    """Quick correctness check of FILE: the edge cases and a few drawn ones per group."""
    _run(problem, file, quick=True, **kw)


register_bench(cli)
register_sandbox(cli)
register_corpus(cli)
register_grading(cli)


def main():
    try:
        settings()  # a bad JUDGE_* value is a usage error, said before anything runs
    except SettingError as exc:
        usage(str(exc))
    try:
        cli(standalone_mode=False)
    except click.exceptions.Abort:
        err("aborted")
        sys.exit(130)
    except click.exceptions.ClickException as exc:
        err(exc.format_message())
        sys.exit(EXIT_USAGE)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except OSError as exc:
        # What the commands' own checks did not foresee: a path the command line gave that the file system
        # refuses is a usage error; any other file is the judge's own (its cache, its scratch): internal.
        if named_on_command_line(exc.filename, sys.argv[1:]):
            err(f"cannot use {exc.filename}: {exc.strerror or exc}")
            sys.exit(EXIT_USAGE)
        err(internal_error(exc))
        sys.exit(EXIT_INTERNAL)
    sys.exit(0)
