"""Course grading commands: ``grade``, ``gradescope bundle|run``, ``prairielearn``, ``serve``.

Same conventions as the rest of the CLI: exit 0 done, 2 usage error (one line:
a bad roster, rubric or option), 3 internal error; never a traceback for bad input.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from judge.cli_common import EXIT_INTERNAL, err, problem_or_exit, sandbox_help, sandbox_or_exit, usage


def _device_and_slots(device: str | None, gpus: str | None, jobs: int | None) -> tuple[str, list[int | None]]:
    """("cpu"|"cuda", slots): JOBS slots per GPU (its host index, repeated), or JOBS interpreter slots on the CPU.

    Several submissions share a GPU: their correctness cases run side by side
    (a GPU has room for many), and their speed runs queue for the GPU's lock
    (judge.timing.lock), so timing still has the GPU to itself. The default on
    a GPU: judge.grading.executors.jobs_per_gpu.
    """
    if jobs is not None and jobs < 1:
        usage("--jobs must be at least 1")
    if gpus is not None:
        try:
            ids = [int(x) for x in gpus.split(",") if x.strip()]
        except ValueError:
            usage(f"--gpus must be GPU indices separated by commas, e.g. 0,1 (got '{gpus}')")
        if not ids or len(set(ids)) != len(ids) or min(ids) < 0:
            usage(f"--gpus must list distinct GPU indices, e.g. 0,1 (got '{gpus}')")
        if device == "cpu":
            usage("--gpus needs the GPU; it cannot go with --device cpu")
        device = "cuda"
    if device is None or device == "cuda":
        import torch

        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if device is None:
            device = "cuda" if count else "cpu"
        if device == "cuda":
            if count == 0:
                usage("--device cuda: no CUDA GPU is available here; use --device cpu")
            ids = ids if gpus is not None else list(range(count))
            if max(ids) >= count:
                usage(f"--gpus {gpus}: this host has {count} GPU(s) (0-{count - 1})")
            from judge.grading.executors import jobs_per_gpu

            per = jobs or jobs_per_gpu(len(ids))
            return "cuda", [i for i in ids for _ in range(per)]
    return "cpu", [None] * (jobs or 1)


def _rubric(path):
    from judge.grading.rubric import RubricError, load_rubric

    try:
        return load_rubric(path)
    except RubricError as exc:
        usage(str(exc))


def _token(token_file: Path | None) -> str | None:
    if token_file is not None:
        try:
            return token_file.read_text().strip() or None
        except OSError as exc:
            usage(f"cannot read the token file {token_file}: {exc.strerror}")
    return os.environ.get("JUDGE_FORWARD_TOKEN") or None


@click.command()
@click.argument("roster", type=click.Path(path_type=Path))
@click.option("--problem", "problem_keys", multiple=True, help="A problem to grade (repeat for several).")
@click.option("--out", type=click.Path(path_type=Path), default=Path("grading"), show_default=True,
              help="Where the store (results.sqlite), reports/ and summary.json go.")
@click.option("--rubric", type=click.Path(path_type=Path), default=None, help="The course's rubric (TOML).")
@click.option("--device", type=click.Choice(["cuda", "cpu"]), default=None,
              help="cuda: --jobs jobs per GPU; cpu: interpreter jobs (default: cuda when a GPU is there).")
@click.option("--gpus", default=None, help="GPU indices to use, e.g. 0,1 (default: all).")
@click.option("--jobs", type=int, default=None,
              help="Jobs at once: per GPU on a GPU host (default: from its cores and memory; speed runs queue "
                   "for the GPU), else interpreter jobs on the CPU (default 1).")
@click.option("--sandbox", default="auto", show_default=True, help=sandbox_help())
@click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True)
@click.option("--ray-address", default=None, help="An existing Ray cluster (default: start a local one).")
@click.option("--seed", type=int, default=None, help="Judge seed (default: from the rubric's secret, else drawn once "
                                                     "per store).")
@click.option("--csv", "csv_path", type=click.Path(path_type=Path), default=None, help="Export one row per "
                                                                                        "student and problem.")
@click.option("--job-timeout", type=float, default=3600, show_default=True,
              help="Seconds after which a judging job is killed (an IE, retried on the next run).")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
def grade(roster, problem_keys, out, rubric, device, gpus, jobs, sandbox, executor, ray_address, seed, csv_path,
          job_timeout, no_progress):
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
    rub = _rubric(rubric)
    sandbox = sandbox_or_exit(sandbox)
    try:
        entries = load_roster(roster, problems)
    except RosterError as exc:
        usage(str(exc))
    if not problems:
        problems = list({e.problem.id: e.problem for e in entries}.values())
    if seed is not None and seed < 0:
        usage("--seed must be >= 0")
    device, slots = _device_and_slots(device, gpus, jobs)
    try:
        if executor == "ray":
            runner = RayExecutor(address=ray_address, slots=slots, use_gpu=device == "cuda",
                                 timeout=job_timeout)
        else:
            if ray_address:
                usage("--ray-address needs --executor ray")
            runner = LocalExecutor(slots, timeout=job_timeout)
    except ExecutorError as exc:
        usage(str(exc))
    console = Console(stderr=True, highlight=False)
    plan = Plan(entries=entries, problems=problems, out=out, rubric=rub, device=device, sandbox=sandbox,
                executor=runner, seed=seed, csv_path=csv_path, progress=not no_progress,
                root=roster if roster.is_dir() else roster.parent)
    try:
        summary = run(plan, console)
    except GradeError as exc:
        usage(str(exc))
    except KeyboardInterrupt:
        err("interrupted: finished results are stored; run the same command again to resume")
        sys.exit(130)
    render_summary(summary, Console(highlight=False, soft_wrap=True))
    if summary["run"]["internal_errors"]:
        err(f"{summary['run']['internal_errors']} job(s) ended in an internal error of the judge; "
             "run the same command again to retry them")
        sys.exit(EXIT_INTERNAL)


@click.group()
def gradescope():
    """Gradescope: build the autograder bundle; grade one submission inside it."""


@gradescope.command("bundle")
@click.option("--problem", "problem_key", required=True)
@click.option("--rubric", type=click.Path(path_type=Path), default=None)
@click.option("-o", "--output", type=click.Path(path_type=Path), default=Path("autograder.zip"), show_default=True)
@click.option("--forward", default=None, help="URL of a GPU grading service (judge serve) to post submissions to.")
@click.option("--token-file", type=click.Path(path_type=Path), default=None,
              help="The service's token, put into the bundle (forward mode).")
@click.option("--sandbox", default="auto", show_default=True, help=sandbox_help())
def gradescope_bundle(problem_key, rubric, output, forward, token_file, sandbox):
    """Build autograder.zip (setup.sh, run_autograder, the judge) for PROBLEM."""
    from judge.grading.gradescope import bundle

    p = problem_or_exit(problem_key)
    _rubric(rubric)  # a broken rubric fails here, not at the first student's submission
    sandbox = sandbox_or_exit(sandbox)
    if token_file is not None and not forward:
        usage("--token-file needs --forward")
    if token_file is not None and not token_file.is_file():
        usage(f"no such token file: {token_file}")
    if forward and not forward.startswith(("http://", "https://")):
        usage(f"--forward must be an http:// or https:// URL (got '{forward}')")
    names = bundle(p, output, rubric_path=rubric, forward=forward, token_file=token_file, sandbox=sandbox)
    click.echo(f"wrote {output} ({len(names)} files) for problem {p.id} ({p.slug})"
               + (f", forwarding to {forward}" if forward else ", interpreter mode"))


def _platform_options(fn):
    options = [
        click.option("--problem", "problem_key", default=None, help="The problem (id or slug)."),
        click.option("--rubric", type=click.Path(path_type=Path), default=None),
        click.option("--delete-rubric", is_flag=True,
                     help="Delete the rubric file once read (it holds the secret; the submission runs next)."),
        click.option("--sandbox", default="auto", show_default=True, help=sandbox_help()),
        click.option("--device", type=click.Choice(["cuda", "cpu"]), default=None),
        click.option("--forward", default=None, help="Post the submission to this grading service instead."),
        click.option("--token-file", type=click.Path(path_type=Path), default=None,
                     help="The service's token (else $JUDGE_FORWARD_TOKEN)."),
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
    rub = _rubric(rubric)
    if delete_rubric and rubric is not None:
        try:
            Path(rubric).unlink()
        except OSError:
            pass
    sandbox = sandbox_or_exit(sandbox)
    if forward:
        device = device or "cuda"  # the service decides; only recorded
    else:
        device, _ = _device_and_slots(device, None, None)
    return p, rub, sandbox, device, _token(token_file) if forward else None


@gradescope.command("run")
@_platform_options
@click.option("--root", type=click.Path(path_type=Path), default=Path("/autograder"), show_default=True,
              help="Gradescope's folder: submission/ in, results/results.json out.")
def gradescope_run(problem_key, rubric, delete_rubric, sandbox, device, forward, token_file, seed, timeout, root):
    """Grade ROOT/submission and write ROOT/results/results.json (what run_autograder calls)."""
    from judge.grading import gradescope as gs

    p, rub, sandbox, device, token = _platform_setup(problem_key, rubric, delete_rubric, sandbox, device, forward,
                                                     token_file)
    doc = gs.run(p, submission_dir=root / "submission", results_path=root / "results" / "results.json",
                 rubric=rub, sandbox=sandbox, device=device, forward=forward, token=token, seed=seed,
                 timeout=timeout)
    click.echo(f"score {doc['score']:g}: {doc['output'].splitlines()[0][:200]}")


@click.command()
@_platform_options
@click.option("--data", type=click.Path(path_type=Path), default=Path("/grade/data/data.json"), show_default=True)
@click.option("--student", type=click.Path(path_type=Path), default=Path("/grade/student"), show_default=True)
@click.option("--results", "results_path", type=click.Path(), default="/grade/results/results.json", show_default=True,
              help="The results file, or a folder to write results.json into.")
def prairielearn(problem_key, rubric, delete_rubric, sandbox, device, forward, token_file, seed, timeout, data,
                 student, results_path):
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
    p, rub, sandbox, device, token = _platform_setup(problem_key, rubric, delete_rubric, sandbox, device, forward,
                                                     token_file)
    doc = pl.run(p, student_dir=student, results_path=results_path, rubric=rub, sandbox=sandbox, device=device,
                 forward=forward, token=token, seed=seed, timeout=timeout)
    click.echo(f"gradable {str(doc['gradable']).lower()}, score {doc['score']:g}")


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8321, show_default=True, help="0 picks a free port (printed).")
@click.option("--device", type=click.Choice(["cuda", "cpu"]), default=None)
@click.option("--gpus", default=None, help="GPU indices (default: all); --jobs submissions per GPU at a time.")
@click.option("--jobs", type=int, default=None,
              help="Jobs at once: per GPU on a GPU host (default: from its cores and memory; speed runs queue "
                   "for the GPU), else interpreter jobs on the CPU (default 1).")
@click.option("--sandbox", default="auto", show_default=True, help=sandbox_help())
@click.option("--token-file", type=click.Path(path_type=Path), default=None,
              help="Require this bearer token (else $JUDGE_SERVE_TOKEN; neither: no token, local use only).")
@click.option("--job-timeout", type=float, default=1800, show_default=True)
def serve(host, port, device, gpus, jobs, sandbox, token_file, job_timeout):
    """The grading service that Gradescope/PrairieLearn bundles forward to (POST /grade, GET /health)."""
    from judge.grading.forward import Service, make_server

    sandbox = sandbox_or_exit(sandbox)
    device, slots = _device_and_slots(device, gpus, jobs)
    token = None
    if token_file is not None:
        token = _token(token_file)
    token = token or os.environ.get("JUDGE_SERVE_TOKEN") or None
    if token is None and host not in ("127.0.0.1", "localhost", "::1"):
        usage(f"--host {host} exposes the service beyond this machine: give it a token "
               "(--token-file or $JUDGE_SERVE_TOKEN)")
    service = Service(device=device, slots=slots, sandbox=sandbox, token=token, timeout=job_timeout,
                      log=lambda m: click.echo(m, err=True))
    try:
        server = make_server(service, host, port)
    except OSError as exc:
        usage(f"cannot listen on {host}:{port}: {exc.strerror}")
    bound = server.server_address
    click.echo(f"serving on http://{bound[0]}:{bound[1]} ({device}, {len(slots)} slot(s), sandbox {sandbox})",
               err=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def register(cli: click.Group) -> None:
    for command in (grade, gradescope, prairielearn, serve):
        cli.add_command(command)
