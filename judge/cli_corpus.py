"""The corpus commands: `judge selftest` judges the problems' corpora, `judge verify` checks problem packages
and then judges their corpora; each compares every verdict with the one its file declares."""

from __future__ import annotations

import sys

import click

from judge.cli_common import (
    EXIT_AC,
    EXIT_REJECTED,
    err,
    problem_or_exit,
    resolve_device,
    sandbox_help,
    sandbox_or_exit,
    usage,
)


def _corpus_options(fn):
    options = [
        click.option("--only", default=None, help="Only submissions whose path contains this text."),
        click.option("--seed", type=int, default=1, show_default=True),
        click.option("--device", type=click.Choice(["cuda", "cpu"]), default=None),
        click.option("--interpret", is_flag=True),
        click.option("--sandbox", default="process", show_default=True, help=sandbox_help()),
        click.option("--jobs", type=int, default=1, show_default=True, help="Submissions judged at once."),
        click.option(
            "--pool",
            default="off",
            show_default=True,
            metavar="N|auto|off",
            help="A worker pool (as judge grade --pool): warm workers handed to the files, one each.",
        ),
    ]
    for opt in reversed(options):
        fn = opt(fn)
    return fn


def _judge_corpora(problems, only, seed, device, interpret, sandbox, jobs, pool="off") -> int:
    """Judge the corpora of PROBLEMS (Problem objects) and print a line each; the number that mismatched."""
    from judge.pool import client as pool_client
    from judge.pool import server as pool_server

    sandbox_or_exit(sandbox)
    try:
        size = pool_server.parse_size(pool)
    except ValueError:
        usage(f"--pool {pool}: give a number of workers (0 or more), auto or off")
    if size == 0:
        return _judge_corpora_now(problems, only, seed, device, interpret, sandbox, jobs)
    # The files are judged here (--jobs 1) or by `submit` children (--jobs N), which are given the pool's socket
    # (judge.selftest.judge_via_cli).
    try:
        server = pool_server.PoolServer(size, log=err)
    except OSError as exc:
        err(f"worker pool: not started ({exc}); every file starts its own workers")
        return _judge_corpora_now(problems, only, seed, device, interpret, sandbox, jobs)
    pool_client.use(server.path)
    try:
        return _judge_corpora_now(problems, only, seed, device, interpret, sandbox, jobs)
    finally:
        pool_client.use(None)
        server.close()
        err(
            f"worker pool: {server.stats['taken']} workers handed out, {server.stats['missed']} started by "
            f"their jobs, {server.stats['wasted']} warmed and not used"
        )


def _judge_corpora_now(problems, only, seed, device, interpret, sandbox, jobs) -> int:
    from judge.options import Options
    from judge.selftest import corpus_of, run_corpus

    device, interpret, note = resolve_device(device, interpret)
    if note:
        err(note)
    # Verdicts only: a speed run per accepted file would queue every job on the GPU lock.
    base = Options(device=device, interpret=interpret, sandbox=sandbox, seed=seed, speed=False)
    items = [(p, expected, path) for p in problems for expected, path in corpus_of(p) if not only or only in str(path)]
    bad = run_corpus(items, base, jobs, click.echo)
    click.echo(f"{bad} of {len(items)} mismatched" if bad else f"all {len(items)} verdicts as declared")
    return bad


def register(cli: click.Group) -> None:
    """Add selftest and verify to the command group ``cli``."""

    @cli.command()
    @click.argument("problems", nargs=-1)
    @_corpus_options
    def selftest(problems, only, seed, device, interpret, sandbox, jobs, pool):
        """Judge the problems' own corpora (default: all) and check every declared verdict."""
        from judge.problems import all_problems

        chosen = [problem_or_exit(k) for k in problems] or all_problems()
        bad = _judge_corpora(chosen, only, seed, device, interpret, sandbox, jobs, pool)
        sys.exit(EXIT_REJECTED if bad else EXIT_AC)

    @cli.command()
    @click.argument("problems", nargs=-1)
    @click.option("--no-corpus", is_flag=True, help="Only the package checks; do not judge the corpus.")
    @_corpus_options
    def verify(problems, no_corpus, only, seed, device, interpret, sandbox, jobs, pool):
        """Check problem packages (default: all): schema, golden interface, statement, skeleton, reference, corpus."""
        from judge.verify import problem_dirs, static_steps

        try:
            dirs = problem_dirs(list(problems))
        except LookupError as exc:
            usage(f"no problem directory matches '{exc.args[0]}'")
        loaded, failed = [], 0
        for d in dirs:
            problem, steps = static_steps(d)
            for step in steps:
                failed += not step.ok
                click.echo(
                    f"{'ok ' if step.ok else 'BAD'} {step.where} {step.name}"
                    + (f": {step.detail}" if step.detail else "")
                )
            if problem is not None and all(s.ok for s in steps):
                loaded.append(problem)
        if not no_corpus and loaded:
            failed += _judge_corpora(loaded, only, seed, device, interpret, sandbox, jobs, pool)
        click.echo("every package is sound" if not failed else f"{failed} check(s) failed")
        sys.exit(EXIT_REJECTED if failed else EXIT_AC)
