"""What a speed run finds besides its times: the failure that ends it, a lost baseline, and its report's notes.

Every part of the run (judge.timing.contenders, plan, measure, verify, result) raises and writes these, so they
live apart from all of them.
"""

from __future__ import annotations

from judge.verdicts import Verdict


class BaselineLost(Exception):
    """The PyTorch baseline failed: the report goes on without it (it carries no points)."""


class BenchFailed(Exception):
    """The speed run ended the judging: its verdict and a one-line reason."""

    def __init__(self, verdict: Verdict, message: str, details: dict | None = None):
        super().__init__(message)
        self.verdict = Verdict(verdict)
        self.message = message
        self.details = details or {}


class Notes(list):
    """The speed report's notes, in the order found; :meth:`add` keeps each once."""

    def add(self, note: str) -> None:
        if note not in self:
            self.append(note)


def shape_label(params: dict) -> str:
    """A bench shape as a finding names it."""
    return ", ".join(f"{k}={v}" for k, v in params.items())
