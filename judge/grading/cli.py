"""Course grading commands: ``grade`` here; ``gradescope bundle|run`` and ``prairielearn`` (cli_platforms),
``serve`` and ``serve-tokens`` (cli_serve); ``register`` adds them all to the judge's command group.

Same conventions as the rest of the CLI: exit 0 done, 2 usage error (one line:
a bad roster, rubric or option), 3 internal error; never a traceback for bad input.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from judge.cli_common import EXIT_INTERNAL, err, output_folder, problem_or_exit, sandbox_or_exit, usage
from judge.grading.cli_checks import device_and_slots, job_options, pool_option, pool_size_or_exit, rubric_or_exit
from judge.grading.cli_platforms import gradescope, prairielearn
from judge.grading.cli_serve import serve, serve_tokens


@click.command()
@click.argument("roster", type=click.Path(path_type=Path))
@click.option("--problem", "problem_keys", multiple=True, help="A problem to grade (repeat for several).")
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=Path("grading"),
    show_default=True,
    help="Where the store (results.sqlite), reports/ and summary.json go.",
)
@click.option("--rubric", type=click.Path(path_type=Path), default=None, help="The course's rubric (TOML).")
@click.option(
    "--device",
    type=click.Choice(["cuda", "cpu"]),
    default=None,
    help="cuda: --jobs jobs per GPU; cpu: interpreter jobs (default: cuda when a GPU is there).",
)
@click.option("--gpus", default=None, help="GPU indices to use, e.g. 0,1 (default: all).")
@job_options
@click.option(
    "--seed", type=int, default=None, help="Judge seed (default: from the rubric's secret, else drawn once per store)."
)
@click.option(
    "--csv", "csv_path", type=click.Path(path_type=Path), default=None, help="Export one row per student and problem."
)
@click.option(
    "--job-timeout",
    type=float,
    default=3600,
    show_default=True,
    help="Seconds after which a judging job is killed (an IE, retried on the next run).",
)
@click.option("--no-progress", is_flag=True, help="No progress bar.")
@pool_option
def grade(
    roster,
    problem_keys,
    out,
    rubric,
    device,
    gpus,
    jobs,
    sandbox,
    executor,
    ray_address,
    seed,
    csv_path,
    job_timeout,
    no_progress,
    pool,
):
    """Grade a ROSTER (a directory with a folder or .py file per student, or a CSV student,problem,path).

    In a student's folder the file for a problem is the first of <id>.py, <NNN>.py, <NNN-slug>.py, <slug>.py
    (hyphens or underscores; .toml instead of .py for an answers problem); with one problem, also the folder's only
    such file. Results go into OUT/results.sqlite as each job ends: run the same command again to resume after an
    interruption.
    """
    from rich.console import Console

    from judge.grading.batch import GradeError, Plan, render_summary, run
    from judge.grading.executors import ExecutorError, LocalExecutor, RayExecutor
    from judge.grading.roster import RosterError, load_roster

    problems = [problem_or_exit(k) for k in problem_keys]
    rub = rubric_or_exit(rubric)
    sandbox = sandbox_or_exit(sandbox)
    try:
        entries = load_roster(roster, problems)
    except RosterError as exc:
        usage(str(exc))
    if not problems:
        problems = list({e.problem.id: e.problem for e in entries}.values())
    if seed is not None and seed < 0:
        usage("--seed must be >= 0")
    device, slots = device_and_slots(device, gpus, jobs)
    if csv_path is not None:
        output_folder(csv_path.parent, "the CSV")
    output_folder(out, "the store")
    try:
        if executor == "ray":
            runner = RayExecutor(address=ray_address, slots=slots, use_gpu=device == "cuda", timeout=job_timeout)
        else:
            if ray_address:
                usage("--ray-address needs --executor ray")
            runner = LocalExecutor(slots, timeout=job_timeout, pool=pool_size_or_exit(pool, executor))
    except ExecutorError as exc:
        usage(str(exc))
    console = Console(stderr=True, highlight=False)
    plan = Plan(
        entries=entries,
        problems=problems,
        out=out,
        rubric=rub,
        device=device,
        sandbox=sandbox,
        executor=runner,
        seed=seed,
        csv_path=csv_path,
        progress=not no_progress,
        root=roster if roster.is_dir() else roster.parent,
    )
    try:
        summary = run(plan, console)
    except GradeError as exc:
        usage(str(exc))
    except KeyboardInterrupt:
        err("interrupted: finished results are stored; run the same command again to resume")
        sys.exit(130)
    render_summary(summary, Console(highlight=False, soft_wrap=True))
    if summary["run"]["internal_errors"]:
        err(
            f"{summary['run']['internal_errors']} job(s) ended in an internal error of the judge; "
            "run the same command again to retry them"
        )
        sys.exit(EXIT_INTERNAL)


def register(cli: click.Group) -> None:
    for command in (grade, gradescope, prairielearn, serve, serve_tokens):
        cli.add_command(command)
