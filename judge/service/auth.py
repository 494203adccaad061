"""Who is asking: staff and student tokens, and the limits a student's submissions meet.

Tokens come from two places:

* ``--token-file FILE`` (or ``$JUDGE_SERVE_TOKEN``): one staff token, named ``staff``: what the
  Gradescope and PrairieLearn bundles (``--forward``) and course staff use;
* ``--tokens FILE``: a CSV with a header ``name,token`` and an optional ``role`` column (``student``, the
  default, or ``staff``): one row per person. Names follow the roster's rule (judge.grading.roster); a token
  is at least 16 characters, or ``sha256:HEX``, the SHA-256 of the token (so the file need not hold tokens
  in the clear). ``judge serve-tokens`` writes one for a roster.

With neither, the service is open, for one person on this machine (``judge serve`` refuses a host other
than localhost then): everyone is ``local``, with staff rights.

A token travels as ``Authorization: Bearer TOKEN`` (the API) or in the ``judge_token`` cookie the login
page sets (the pages; HttpOnly, SameSite=Strict). Tokens are compared by their SHA-256, so the lookup's
time says nothing about a token.
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import secrets
from dataclasses import dataclass
from pathlib import Path

from judge.grading.roster import STUDENT_NAME

COOKIE = "judge_token"
MIN_TOKEN = 16


class AuthError(Exception):
    """The tokens file is wrong: a usage error, one line."""


@dataclass(frozen=True)
class Identity:
    name: str
    role: str  # "student" or "staff"

    @property
    def staff(self) -> bool:
        return self.role == "staff"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Auth:
    def __init__(self, people: dict[str, Identity] | None = None, open_access: bool = False):
        self._by_digest = dict(people or {})
        self.open = open_access

    @classmethod
    def load(cls, staff_token: str | None, tokens_file: Path | None) -> "Auth":
        people: dict[str, Identity] = {}
        names: set[str] = set()
        if staff_token is not None:
            people[_digest(staff_token)] = Identity("staff", "staff")
            names.add("staff")
        if tokens_file is not None:
            for digest, who in _read_tokens(tokens_file):
                if who.name in names:
                    raise AuthError(f"{tokens_file}: '{who.name}' is listed twice (or is the --token-file's "
                                    "'staff')")
                if digest in people:
                    raise AuthError(f"{tokens_file}: two people share one token ({who.name})")
                names.add(who.name)
                people[digest] = who
        return cls(people, open_access=not people)

    def identify(self, token: str | None) -> Identity | None:
        if self.open:
            return Identity("local", "staff")
        if not token:
            return None
        return self._by_digest.get(_digest(token))

    def students(self) -> list[str]:
        return sorted(i.name for i in self._by_digest.values() if not i.staff)

    def staff_names(self) -> set[str]:
        return {i.name for i in self._by_digest.values() if i.staff}


def _read_tokens(path: Path):
    """(digest, Identity) per row of the tokens file."""
    for name, _token, role, digest in _rows(path):
        yield digest, Identity(name, role)


def _rows(path: Path):
    """(name, token as written, role, SHA-256 of the token) per row of the tokens file, checked."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise AuthError(f"cannot read the tokens file {path}: {getattr(exc, 'strerror', None) or exc}") from None
    reader = csv.DictReader(text.splitlines())
    header = [h.strip().lower() for h in (reader.fieldnames or [])]
    key = "name" if "name" in header else "student"
    if not {key, "token"} <= set(header):
        raise AuthError(f"{path}: the first line must be a header name,token (and optionally role)")
    reader.fieldnames = header
    for lineno, row in enumerate(reader, start=2):
        where = f"{path}:{lineno}"
        name = (row.get(key) or "").strip()
        token = (row.get("token") or "").strip()
        role = (row.get("role") or "student").strip().lower() or "student"
        if not STUDENT_NAME.match(name):
            raise AuthError(f"{where}: name '{name}' must be 1-128 letters, digits or ._@+-")
        if role not in ("student", "staff"):
            raise AuthError(f"{where}: role must be student or staff (got '{role}')")
        if token.startswith("sha256:"):
            digest = token[len("sha256:"):].lower()
            if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
                raise AuthError(f"{where}: sha256: must be followed by 64 hex digits")
        elif len(token) < MIN_TOKEN:
            raise AuthError(f"{where}: the token of '{name}' must be at least {MIN_TOKEN} characters")
        else:
            digest = _digest(token)
        yield name, token, role, digest


def new_token() -> str:
    return secrets.token_urlsafe(24)


def write_tokens(names: list[str], out: Path, role: str = "student") -> list[str]:
    """Add a row with a fresh token to OUT (a tokens CSV, created if missing) for each of NAMES it lacks;
    returns the names added. Existing rows, tokens included, are kept as they are."""
    rows = [(n, t, r) for n, t, r, _d in _rows(out)] if out.exists() else []
    have = {n for n, _t, _r in rows}
    added = [n for n in dict.fromkeys(names) if n not in have]
    for name in added:
        if not STUDENT_NAME.match(name):
            raise AuthError(f"name '{name}' must be 1-128 letters, digits or ._@+-")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    with open(tmp, "w", newline="", encoding="utf-8") as f:
        tmp.chmod(0o600)  # the tokens are secrets: only their owner reads the file
        w = csv.writer(f)
        w.writerow(["name", "token", "role"])
        w.writerows(rows)
        w.writerows((name, new_token(), role) for name in added)
    tmp.replace(out)
    return added


class RateLimited(Exception):
    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


def check_rate(store, who: Identity, rate: tuple[int, int] | None, max_pending: int) -> None:
    """Raise RateLimited when the student WHO may not submit now (staff have no limits). Counted from the
    store's jobs, so a restart forgets nothing."""
    if who.staff:
        return
    if max_pending and store.pending_of(who.name) >= max_pending:
        raise RateLimited(f"you already have {max_pending} submission(s) waiting or being judged; "
                          "submit again when one is done", 30)
    if rate is None:
        return
    count, seconds = rate
    now = dt.datetime.now(dt.timezone.utc)
    since = (now - dt.timedelta(seconds=seconds)).isoformat(timespec="milliseconds")
    n, oldest = store.submitted_since(who.name, since)
    if n >= count:
        wait = seconds
        if oldest:
            wait = int((dt.datetime.fromisoformat(oldest) + dt.timedelta(seconds=seconds) - now).total_seconds()) + 1
        raise RateLimited(f"at most {count} submission(s) per {_period(seconds)}; try again in {max(wait, 1)} s",
                          max(wait, 1))


def _period(seconds: int) -> str:
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds % size == 0:
            n = seconds // size
            return unit if n == 1 else f"{n} {unit}s"
    return f"{seconds} s"
