"""What ``judge serve`` was asked for: one object the app, the runner and the auth read."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from judge.grading.rubric import Rubric

PERIODS = {
    "s": 1,
    "sec": 1,
    "second": 1,
    "m": 60,
    "min": 60,
    "minute": 60,
    "h": 3600,
    "hour": 3600,
    "d": 86400,
    "day": 86400,
}


class ConfigError(Exception):
    """A bad option of ``judge serve``: a usage error, one line."""


def parse_rate(text: str) -> tuple[int, int] | None:
    """``"20/hour"`` -> (20, 3600); ``"0"`` or ``"off"`` -> None (no limit). Periods: s, m, h, d (or their names),
    optionally with a count (``"5/10m"``)."""
    text = text.strip().lower()
    if text in ("0", "off", "none"):
        return None
    match = re.fullmatch(r"(\d+)\s*/\s*(\d*)\s*([a-z]+)", text)
    if not match or match.group(3).rstrip("s") not in PERIODS and match.group(3) not in PERIODS:
        raise ConfigError(f"--rate-limit must look like 20/hour, 5/10m or off (got '{text}')")
    unit = match.group(3) if match.group(3) in PERIODS else match.group(3).rstrip("s")
    count, times = int(match.group(1)), int(match.group(2) or 1)
    if count < 1 or times < 1:
        raise ConfigError(f"--rate-limit needs a count and a period of at least 1 (got '{text}')")
    return count, times * PERIODS[unit]


@dataclass
class ServiceConfig:
    state: Path  # the grading store's folder: results.sqlite (as `judge grade --out`), progress/, plots/
    device: str = "cpu"  # "cpu" (Triton's interpreter) or "cuda"
    slots: list = field(default_factory=lambda: [None])  # one per job at once: a GPU index, or None on the CPU
    sandbox: str = "auto"
    job_timeout: float = 1800.0
    executor: str = "local"  # or "ray"
    ray_address: str | None = None
    rubric: Rubric = field(default_factory=Rubric)
    staff_token: str | None = None  # $JUDGE_SERVE_TOKEN: the staff's (and the --forward clients')
    staff_file: Path | None = None  # --token-file: the same, from a file read again when it changes
    tokens_file: Path | None = None  # --tokens: name,token[,role] per person
    rate: tuple[int, int] | None = (20, 3600)  # submissions per student per period (seconds); None: no limit
    max_pending: int = 3  # a student's submissions queued or running at once
    max_upload: int = 512 << 10  # bytes of one submitted file
    max_attempts: int = 3  # a job started this many times without finishing (the service died each time): IE
    secure_cookies: bool = False  # the login cookie only over https (behind a TLS proxy)
    max_examples: int | None = None  # drawn cases per group (tests, demos, benchmarks); None: the spec's
    pool: int = 0  # warm workers per kind (judge.pool, --pool); 0: every job starts its own
    session_hours: float = 12.0  # a page login's lifetime

    def __post_init__(self):
        # Resolved once, here: the job processes run in another folder, where a relative path names nothing.
        self.state = Path(self.state).resolve()
        self.staff_file = Path(self.staff_file).resolve() if self.staff_file else None
        self.tokens_file = Path(self.tokens_file).resolve() if self.tokens_file else None

    @property
    def store_path(self) -> Path:
        return self.state / "results.sqlite"
