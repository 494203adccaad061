"""`judge serve`, the grading service (a job queue, its API and web pages), and `judge serve-tokens`, which
gives each person of a roster a token for it."""

from __future__ import annotations

from pathlib import Path

import click

from judge.cli_common import err, output_folder, sandbox_or_exit, usage
from judge.grading.cli_checks import (
    device_and_slots,
    job_options,
    pool_option,
    pool_size_or_exit,
    rubric_or_exit,
    staff_token,
)
from judge.settings import settings


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8321, show_default=True, help="0 picks a free port (printed).")
@click.option("--device", type=click.Choice(["cuda", "cpu"]), default=None)
@click.option("--gpus", default=None, help="GPU indices (default: all); --jobs submissions per GPU at a time.")
@job_options
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
@pool_option
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
    pool_size = pool_size_or_exit(pool, executor)
    try:
        rate = parse_rate(rate_limit)
    except ConfigError as exc:
        usage(str(exc))
    asked = device
    device, slots = device_and_slots(device, gpus, jobs, fallback=True)
    token = staff_token(token_file) if token_file is not None else None  # read here for the checks below only
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
        rubric=rubric_or_exit(rubric),
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
