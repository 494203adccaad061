"""The course platforms' commands: `judge gradescope bundle|run` builds Gradescope's autograder and grades one
submission inside it; `judge prairielearn` is PrairieLearn's external grader."""

from __future__ import annotations

import os
from pathlib import Path

import click

from judge.cli_common import output_folder, problem_or_exit, sandbox_help, sandbox_or_exit, usage
from judge.grading.cli_checks import device_and_slots, rubric_or_exit, staff_token


@click.group()
def gradescope():
    """Gradescope: build the autograder bundle; grade one submission inside it."""


@gradescope.command("bundle")
@click.option("--problem", "problem_key", required=True)
@click.option("--rubric", type=click.Path(path_type=Path), default=None)
@click.option("-o", "--output", type=click.Path(path_type=Path), default=Path("autograder.zip"), show_default=True)
@click.option("--forward", default=None, help="URL of a GPU grading service (judge serve) to post submissions to.")
@click.option(
    "--token-file",
    type=click.Path(path_type=Path),
    default=None,
    help="The service's token, put into the bundle (forward mode).",
)
@click.option("--sandbox", default="auto", show_default=True, help=sandbox_help())
def gradescope_bundle(problem_key, rubric, output, forward, token_file, sandbox):
    """Build autograder.zip (setup.sh, run_autograder, the judge) for PROBLEM."""
    from judge.grading.gradescope import bundle

    p = problem_or_exit(problem_key)
    rubric_or_exit(rubric)  # a broken rubric fails here, not at the first student's submission
    sandbox = sandbox_or_exit(sandbox)
    if token_file is not None and not forward:
        usage("--token-file needs --forward")
    if token_file is not None and not token_file.is_file():
        usage(f"no such token file: {token_file}")
    if forward and not forward.startswith(("http://", "https://")):
        usage(f"--forward must be an http:// or https:// URL (got '{forward}')")
    output_folder(output.parent, "the bundle")
    names = bundle(p, output, rubric_path=rubric, forward=forward, token_file=token_file, sandbox=sandbox)
    click.echo(
        f"wrote {output} ({len(names)} files) for problem {p.id} ({p.slug})"
        + (f", forwarding to {forward}" if forward else ", interpreter mode")
    )


def _platform_options(fn):
    options = [
        click.option("--problem", "problem_key", default=None, help="The problem (id or slug)."),
        click.option("--rubric", type=click.Path(path_type=Path), default=None),
        click.option(
            "--delete-rubric",
            is_flag=True,
            help="Delete the rubric file once read (it holds the secret; the submission runs next).",
        ),
        click.option("--sandbox", default="auto", show_default=True, help=sandbox_help()),
        click.option("--device", type=click.Choice(["cuda", "cpu"]), default=None),
        click.option("--forward", default=None, help="Post the submission to this grading service instead."),
        click.option(
            "--token-file",
            type=click.Path(path_type=Path),
            default=None,
            help="The service's staff token (else $JUDGE_SERVE_TOKEN).",
        ),
        click.option("--seed", type=int, default=None, help="Default: from the rubric's secret, else random."),
        click.option("--timeout", type=float, default=1800, show_default=True, help="Seconds for the judging."),
    ]
    for opt in reversed(options):
        fn = opt(fn)
    return fn


def _platform_setup(problem_key, rubric, delete_rubric, sandbox, device, forward, token_file):
    if problem_key is None:
        usage("--problem is required")
    p = problem_or_exit(problem_key)
    rub = rubric_or_exit(rubric)
    if delete_rubric and rubric is not None:
        try:
            Path(rubric).unlink()
        except OSError:
            pass
    sandbox = sandbox_or_exit(sandbox)
    if forward:
        device = device or "cuda"  # the service decides; only recorded
    else:
        device, _ = device_and_slots(device, None, None)
    return p, rub, sandbox, device, staff_token(token_file) if forward else None


@gradescope.command("run")
@_platform_options
@click.option(
    "--root",
    type=click.Path(path_type=Path),
    default=Path("/autograder"),
    show_default=True,
    help="Gradescope's folder: submission/ in, results/results.json out.",
)
def gradescope_run(problem_key, rubric, delete_rubric, sandbox, device, forward, token_file, seed, timeout, root):
    """Grade ROOT/submission and write ROOT/results/results.json (what run_autograder calls)."""
    from judge.grading import gradescope as gs

    p, rub, sandbox, device, token = _platform_setup(
        problem_key, rubric, delete_rubric, sandbox, device, forward, token_file
    )
    doc = gs.run(
        p,
        submission_dir=root / "submission",
        results_path=root / "results" / "results.json",
        rubric=rub,
        sandbox=sandbox,
        device=device,
        forward=forward,
        token=token,
        seed=seed,
        timeout=timeout,
    )
    click.echo(f"score {doc['score']:g}: {doc['output'].splitlines()[0][:200]}")


@click.command()
@_platform_options
@click.option("--data", type=click.Path(path_type=Path), default=Path("/grade/data/data.json"), show_default=True)
@click.option("--student", type=click.Path(path_type=Path), default=Path("/grade/student"), show_default=True)
@click.option(
    "--results",
    "results_path",
    type=click.Path(),
    default="/grade/results/results.json",
    show_default=True,
    help="The results file, or a folder to write results.json into.",
)
def prairielearn(
    problem_key, rubric, delete_rubric, sandbox, device, forward, token_file, seed, timeout, data, student, results_path
):
    """PrairieLearn external grader: grade /grade/student, write /grade/results/results.json.

    The problem is --problem, else the question's params.problem in data.json.
    """
    from judge.grading import prairielearn as pl

    if problem_key is None:
        problem_key = pl.problem_key(data)
        if problem_key is None:
            usage(f"no --problem, and {data} has no params.problem")
    folder = str(results_path).endswith(("/", os.sep))
    results_path = Path(results_path)
    if folder or results_path.is_dir():
        results_path = results_path / "results.json"  # a folder: PrairieLearn's file name in it
    p, rub, sandbox, device, token = _platform_setup(
        problem_key, rubric, delete_rubric, sandbox, device, forward, token_file
    )
    doc = pl.run(
        p,
        student_dir=student,
        results_path=results_path,
        rubric=rub,
        sandbox=sandbox,
        device=device,
        forward=forward,
        token=token,
        seed=seed,
        timeout=timeout,
    )
    click.echo(f"gradable {str(doc['gradable']).lower()}, score {doc['score']:g}")
