"""What every command of the CLI shares: exit codes, one-line errors, looking up a problem, checking a file.

Exit codes: 0 accepted (or done); 1 judged and not accepted; 2 usage error
(unknown problem, missing file, bad option: one line says what is valid); 3
internal error of the judge. Every error is one line on stderr, never a
traceback. Nothing here imports torch, so a usage error answers at once.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

EXIT_AC, EXIT_REJECTED, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


def err(message: str) -> None:
    click.echo(f"judge: {message}", err=True)


def usage(message: str):
    """A usage error: one line, exit 2."""
    err(message)
    sys.exit(EXIT_USAGE)


def internal(message: str):
    """An error of the judge's: one line, exit 3."""
    err(f"internal error: {message}")
    sys.exit(EXIT_INTERNAL)


def problem_or_exit(key: str):
    """The problem with this id, zero-padded id or slug; a usage error naming the valid ones otherwise."""
    from judge.problems import ProblemError, find_problem, valid_keys

    try:
        problem = find_problem(key)
        if problem is None:
            usage(f"unknown problem '{key}'; valid: {valid_keys()}")
    except ProblemError as exc:
        internal(f"a problem directory is malformed: {exc}")
    return problem


def check_file(file: Path) -> None:
    if not file.exists():
        usage(f"no such file: {file}")
    if file.is_dir():
        usage(f"{file} is a directory; give the submission's .py file")


def sandbox_or_exit(name: str) -> str:
    from judge.sandbox import backend_names

    if name not in backend_names():
        usage(f"unknown sandbox '{name}'; valid: {', '.join(backend_names())}")
    return name


def sandbox_help() -> str:
    from judge.sandbox import describe

    return describe()
