"""Course grading commands: ``grade``, ``gradescope bundle|run``, ``prairielearn``, ``serve``.

Same conventions as the rest of the CLI: exit 0 done, 2 usage error (one line:
a bad roster, rubric or option), 3 internal error; never a traceback for bad input.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from judge.cli_common import EXIT_INTERNAL, err, output_folder, problem_or_exit, sandbox_help, sandbox_or_exit, usage
from judge.settings import settings


def _device_and_slots(
    device: str | None, gpus: str | None, jobs: int | None, fallback: bool = False
) -> tuple[str, list[int | None]]:
    """("cpu"|"cuda", slots): JOBS slots per GPU (its host index, repeated), or JOBS interpreter slots on the CPU.

    FALLBACK (``judge serve``): without --device, a host with no GPU judges in the interpreter even when
    --gpus names some (the caller says so), so that one start command works on both kinds of host.

    Several submissions share a GPU: each reserves its memory in the GPU's
    admission (judge.gpu_admission) and waits there for room, their
    correctness cases run side by side, and their speed runs queue for the
    GPU's lock (judge.timing.lock), so timing still has the GPU to itself. The
    defaults: judge.grading.executors.jobs_per_gpu, jobs_on_cpu.
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
    if device is None or device == "cuda":
        import torch

        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if gpus is not None and device is None and not (fallback and count == 0):
            device = "cuda"
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
    from judge.grading.executors import jobs_on_cpu

    return "cpu", [None] * (jobs or jobs_on_cpu())


def _pool_size(text, executor: str) -> int:
    """--pool's size (judge.pool): warm workers per kind; 0 when off. Ray's tasks run on other hosts' processes:
    no pool there."""
    from judge.pool.server import parse_size

    given = text is not None
    text = text if given else settings().pool
    try:
        size = parse_size(text)
    except ValueError:
        usage(
            f"--pool {text}: give a number of workers (0 or more), auto or off"
            if given
            else f"JUDGE_POOL={text}: give a number of workers (0 or more), auto or off"
        )
    if executor == "ray":
        if given and size > 0:
            usage("--pool works with the local executor only (Ray's tasks start their own workers)")
        return 0
    return size


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
    return settings().serve_token


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
@click.option(
    "--jobs",
    type=int,
    default=None,
    help="Jobs at once at most: per GPU on a GPU host (default: from its cores; the GPU's memory, "
    "shared with every judge on the host, admits them), else interpreter jobs on the CPU "
    "(default: one per 4 cores).",
)
@click.option("--sandbox", default="auto", show_default=True, help=sandbox_help())
@click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True)
@click.option("--ray-address", default=None, help="An existing Ray cluster (default: start a local one).")
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
@click.option(
    "--pool",
    "pool",
    default=None,
    metavar="N|auto|off",
    help="Warm workers kept per kind (torch and Triton imported, no submission yet), handed to the "
    "jobs, one submission each: auto = as many as one job holds, at most 4; off (or 0): every "
    "job starts its own (default: $JUDGE_POOL, else auto; not with --executor ray).",
)
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
    if csv_path is not None:
        output_folder(csv_path.parent, "the CSV")
    output_folder(out, "the store")
    try:
        if executor == "ray":
            runner = RayExecutor(address=ray_address, slots=slots, use_gpu=device == "cuda", timeout=job_timeout)
        else:
            if ray_address:
                usage("--ray-address needs --executor ray")
            runner = LocalExecutor(slots, timeout=job_timeout, pool=_pool_size(pool, executor))
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
    _rubric(rubric)  # a broken rubric fails here, not at the first student's submission
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


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8321, show_default=True, help="0 picks a free port (printed).")
@click.option("--device", type=click.Choice(["cuda", "cpu"]), default=None)
@click.option("--gpus", default=None, help="GPU indices (default: all); --jobs submissions per GPU at a time.")
@click.option(
    "--jobs",
    type=int,
    default=None,
    help="Jobs at once at most: per GPU on a GPU host (default: from its cores; the GPU's memory, "
    "shared with every judge on the host, admits them), else interpreter jobs on the CPU "
    "(default: one per 4 cores).",
)
@click.option("--sandbox", default="auto", show_default=True, help=sandbox_help())
@click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True)
@click.option("--ray-address", default=None, help="An existing Ray cluster (default: start a local one).")
@click.option(
    "--state",
    type=click.Path(path_type=Path),
    default=Path("grading"),
    show_default=True,
    help="The grading store's folder (results.sqlite, as judge grade --out) and the service's files.",
)
@click.option(
    "--rubric",
    type=click.Path(path_type=Path),
    default=None,
    help="The course's rubric: the seed of the graded runs, what students see before the deadline.",
)
@click.option(
    "--token-file",
    type=click.Path(path_type=Path),
    default=None,
    help="The staff token (else $JUDGE_SERVE_TOKEN): staff and the --forward clients use it.",
)
@click.option(
    "--tokens",
    "tokens_file",
    type=click.Path(path_type=Path),
    default=None,
    help="A CSV name,token[,role] with a token per student (and staff); see judge serve-tokens.",
)
@click.option(
    "--rate-limit",
    default="20/hour",
    show_default=True,
    help="Submissions per student per period (e.g. 5/10m; off for none); staff are not limited.",
)
@click.option(
    "--max-pending",
    type=int,
    default=3,
    show_default=True,
    help="A student's submissions waiting or being judged at once.",
)
@click.option("--max-upload", type=int, default=512, show_default=True, help="KiB of one submitted file.")
@click.option("--secure-cookies", is_flag=True, help="The login cookie only over https (behind a TLS proxy).")
@click.option("--job-timeout", type=float, default=1800, show_default=True)
@click.option(
    "--max-examples",
    type=int,
    default=None,
    help="Drawn cases per group for every job (default: each problem's own); for demos, tests and "
    "benchmarks, as it tests less.",
)
@click.option(
    "--pool",
    "pool",
    default=None,
    metavar="N|auto|off",
    help="Warm workers kept per kind (torch and Triton imported, no submission yet), handed to the "
    "jobs, one submission each: auto = as many as one job holds, at most 4; off (or 0): every "
    "job starts its own (default: $JUDGE_POOL, else auto; not with --executor ray).",
)
@click.option("--session-hours", type=float, default=12, show_default=True, help="How long a login of the pages lasts.")
def serve(
    host,
    port,
    device,
    gpus,
    jobs,
    sandbox,
    executor,
    ray_address,
    state,
    rubric,
    token_file,
    tokens_file,
    rate_limit,
    max_pending,
    max_upload,
    secure_cookies,
    job_timeout,
    max_examples,
    pool,
    session_hours,
):
    """The grading service: a job queue, its API (/docs) and web pages for students and staff.

    POST /submissions answers with a job id at once; GET /submissions/ID gives its status and report. Jobs live
    in STATE/results.sqlite (the store of judge grade): a restart loses nothing and judges nothing twice.
    """
    try:
        import fastapi  # noqa: F401
        import jinja2  # noqa: F401
        import multipart  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        usage(f"judge serve needs the [serve] extra ({exc.name} is missing): pip install -e '.[serve]'")
    from judge.service.config import ConfigError, ServiceConfig, parse_rate
    from judge.service.server import ServeError, bind, open_service
    from judge.service.server import serve as run_server

    sandbox = sandbox_or_exit(sandbox)
    if ray_address and executor != "ray":
        usage("--ray-address needs --executor ray")
    if max_pending < 0 or max_upload < 1:
        usage("--max-pending must be >= 0 and --max-upload >= 1")
    if max_examples is not None and max_examples < 1:
        usage("--max-examples must be >= 1")
    if not session_hours > 0:
        usage("--session-hours must be > 0")
    pool_size = _pool_size(pool, executor)
    try:
        rate = parse_rate(rate_limit)
    except ConfigError as exc:
        usage(str(exc))
    asked = device
    device, slots = _device_and_slots(device, gpus, jobs, fallback=True)
    token = _token(token_file) if token_file is not None else None  # read here for the checks below only
    env_token = None if token_file is not None else settings().serve_token
    token = token or env_token
    if token is None and tokens_file is None and host not in ("127.0.0.1", "localhost", "::1"):
        usage(
            f"--host {host} exposes the service beyond this machine: give it tokens "
            "(--token-file, $JUDGE_SERVE_TOKEN or --tokens)"
        )
    config = ServiceConfig(
        state=state,
        device=device,
        slots=slots,
        sandbox=sandbox,
        job_timeout=job_timeout,
        executor=executor,
        ray_address=ray_address,
        rubric=_rubric(rubric),
        staff_token=env_token,
        staff_file=token_file,
        tokens_file=tokens_file,
        rate=rate,
        max_pending=max_pending,
        max_upload=max_upload << 10,
        secure_cookies=secure_cookies,
        max_examples=max_examples,
        pool=pool_size,
        session_hours=session_hours,
    )
    log = lambda m: click.echo(m, err=True)  # noqa: E731
    try:
        service = open_service(config, log=log)
    except ServeError as exc:
        usage(str(exc))
    try:
        sock = bind(host, port)
    except OSError as exc:
        service.store.close()
        usage(f"cannot listen on {host}:{port}: {exc.strerror}")
    where = sock.getsockname()
    shown = f"[{where[0]}]" if ":" in where[0] else where[0]
    # The first line (scripts and tests read the port from it when --port is 0).
    click.echo(
        f"serving on http://{shown}:{where[1]} ({device}, {len(slots)} slot(s), {executor} executor, "
        f"sandbox {sandbox}, store {config.store_path})",
        err=True,
    )
    if gpus is not None and asked is None and device == "cpu":
        err(f"no CUDA GPU here: judging in Triton's interpreter on the CPU (--gpus {gpus} is for a GPU host)")
    if token is not None and len(token) < 16:
        err("warning: the staff token is short (under 16 characters): anyone who guesses it is staff")
    try:
        run_server(service, sock, log=log)
    except KeyboardInterrupt:
        pass


@click.command("serve-tokens")
@click.argument("roster", type=click.Path(path_type=Path), required=False)
@click.option(
    "-o",
    "--out",
    type=click.Path(path_type=Path),
    required=True,
    help="The tokens CSV to write or extend (judge serve --tokens).",
)
@click.option("--role", type=click.Choice(["student", "staff"]), default="student", show_default=True)
@click.option(
    "--revoke",
    multiple=True,
    metavar="NAME",
    help="Take NAME's token out (repeat for several); a running judge serve stops taking it within a "
    "second. Name them in ROSTER too to give them a new token.",
)
def serve_tokens(roster, out, role, revoke):
    """Give every person of ROSTER a token in OUT (kept for those who have one already); --revoke takes some out.

    ROSTER: a roster directory or CSV (as judge grade reads; its students), or a text file of names, one a line.
    """
    from judge.service.auth import AuthError, write_tokens

    if roster is None and not revoke:
        usage("give a ROSTER, or --revoke NAME")
    names = _roster_names(roster) if roster is not None else []
    if revoke and not out.exists():
        usage(f"no such tokens file: {out}")
    output_folder(out.parent, "the tokens file")
    try:
        added, revoked = write_tokens(names, out, role=role, revoke=list(revoke))
    except AuthError as exc:
        usage(str(exc))
    missing = [n for n in revoke if n not in revoked]
    if missing:
        err(f"not in {out}: {', '.join(missing)}")
    click.echo(
        f"{out}: {len(added)} token(s) added, {len(names) - len(added)} kept"
        + (f", {len(revoked)} revoked" if revoke else "")
        + "; give each person theirs (the file is readable by its owner only)"
    )


def _roster_names(roster: Path) -> list[str]:
    import csv

    from judge.grading.roster import STUDENT_NAME

    if not roster.exists():
        usage(f"no such roster: {roster}")
    if roster.is_dir():
        names = [p.stem if p.is_file() else p.name for p in sorted(roster.iterdir()) if not p.name.startswith(".")]
    elif roster.suffix.lower() == ".csv":
        rows = list(csv.DictReader(roster.read_text(encoding="utf-8-sig").splitlines()))
        key = next((k for k in ("student", "name") if rows and k in rows[0]), None)
        if key is None:
            usage(f"{roster}: the CSV needs a student (or name) column")
        names = [r[key].strip() for r in rows]
    else:
        names = [line.strip() for line in roster.read_text().splitlines() if line.strip() and not line.startswith("#")]
    bad = [n for n in names if not STUDENT_NAME.match(n)]
    if bad:
        usage(f"{roster}: name '{bad[0]}' must be 1-128 letters, digits or ._@+-")
    return list(dict.fromkeys(names))


def register(cli: click.Group) -> None:
    for command in (grade, gradescope, prairielearn, serve, serve_tokens):
        cli.add_command(command)
