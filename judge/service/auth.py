"""Who is asking: staff and student tokens, and the limits a student's submissions meet.

Tokens come from two places:

* ``--token-file FILE`` (or ``$JUDGE_SERVE_TOKEN``): one staff token, named ``staff``: what the
  Gradescope and PrairieLearn bundles (``--forward``) and course staff use;
* ``--tokens FILE``: a CSV with a header ``name,token`` and an optional ``role`` column (``student``, the
  default, or ``staff``): one row per person. Names follow the roster's rule (judge.grading.roster); a token
  is at least 16 characters, or ``sha256:HEX``, the SHA-256 of the token (so the file need not hold tokens
  in the clear). ``judge serve-tokens`` writes one for a roster, and ``--revoke NAME`` takes a row out.

Both files are read again when they change (looked at once a second, at most): a token added works at once,
one removed (revoked) stops working at once, without a restart; a file that does not parse keeps the tokens
read before, and the service's log says why. With neither option the service is open, for one person on
this machine (``judge serve`` refuses a host other than localhost then): everyone is ``local``, with staff
rights. A tokens file with no rows does not open it.

A token travels as ``Authorization: Bearer TOKEN`` (the API). The pages' login exchanges it for a session
(judge.service.sessions): the cookie holds a random session id, never the token. Tokens are compared by
their SHA-256, so the lookup's time says nothing about a token.
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import os
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from judge.grading import csv_safe
from judge.grading.roster import STUDENT_NAME

MIN_TOKEN = 16
RELOAD_EVERY = 1.0  # seconds between looks at the token files


class AuthError(Exception):
    """The tokens file is wrong: a usage error, one line."""


@dataclass(frozen=True)
class Identity:
    name: str
    role: str  # "student" or "staff"
    token: str = ""  # the SHA-256 of the token it came with ("" in open mode)

    @property
    def staff(self) -> bool:
        return self.role == "staff"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Auth:
    """The people who may use the service, from the token files, kept up to date with them."""

    def __init__(
        self, staff_token: str | None = None, tokens_file: Path | None = None, staff_file: Path | None = None, log=print
    ):
        self.fixed_staff = staff_token  # $JUDGE_SERVE_TOKEN (no file to watch)
        self.staff_file = Path(staff_file).resolve() if staff_file else None
        self.tokens_file = Path(tokens_file).resolve() if tokens_file else None
        self.open = staff_token is None and staff_file is None and tokens_file is None
        self.log = log
        self._lock = threading.Lock()
        self._checked = time.monotonic()
        self._stamp = self._stamps()
        self._by_digest = self._read()  # AuthError at start: a usage error

    @classmethod
    def load(cls, staff_token: str | None, tokens_file: Path | None, staff_file: Path | None = None, log=print) -> Auth:
        return cls(staff_token, tokens_file, staff_file, log)

    def _stamps(self) -> tuple:
        out = []
        for path in (self.staff_file, self.tokens_file):
            try:
                st = os.stat(path) if path else None
                out.append((st.st_mtime_ns, st.st_size, st.st_ino) if st else None)
            except OSError:
                out.append("missing")
        return tuple(out)

    def _read(self) -> dict[str, Identity]:
        people: dict[str, Identity] = {}
        names: set[str] = set()
        staff_token = self.fixed_staff
        if self.staff_file is not None:
            try:
                staff_token = self.staff_file.read_text().strip() or None
            except OSError as exc:
                raise AuthError(f"cannot read the token file {self.staff_file}: {exc.strerror}") from None
            if staff_token is None:
                raise AuthError(f"the token file {self.staff_file} is empty")
        if staff_token is not None:
            people[digest(staff_token)] = Identity("staff", "staff", digest(staff_token))
            names.add("staff")
        if self.tokens_file is not None:
            for token_digest, who in _read_tokens(self.tokens_file):
                if who.name in names:
                    raise AuthError(
                        f"{self.tokens_file}: '{who.name}' is listed twice (or is the --token-file's 'staff')"
                    )
                if token_digest in people:
                    raise AuthError(f"{self.tokens_file}: two people share one token ({who.name})")
                names.add(who.name)
                people[token_digest] = who
        return people

    def refresh(self, force: bool = False) -> None:
        """Read the token files again when they changed (at most once a RELOAD_EVERY, unless FORCE)."""
        now = time.monotonic()
        if not force and now - self._checked < RELOAD_EVERY:
            return
        with self._lock:
            self._checked = now
            stamp = self._stamps()
            if stamp == self._stamp:
                return
            self._stamp = stamp  # looked at before reading: a write meanwhile shows as another change
            try:
                people = self._read()
            except AuthError as exc:
                self.log(f"the tokens changed but cannot be read ({exc}); the previous tokens stay in force")
                return
            added = len(set(people) - set(self._by_digest))
            gone = len(set(self._by_digest) - set(people))
            self._by_digest = people
            self.log(f"tokens read again: {len(people)} in force ({added} new, {gone} revoked)")

    def identify(self, token: str | None) -> Identity | None:
        if self.open:
            return Identity("local", "staff")
        if not token:
            return None
        return self.by_digest(digest(token))

    def by_digest(self, token_digest: str) -> Identity | None:
        """Whoever holds the token with this SHA-256 now (None: no one, or it was revoked)."""
        if self.open:
            return Identity("local", "staff")
        self.refresh()
        return self._by_digest.get(token_digest)

    def students(self) -> list[str]:
        self.refresh()
        return sorted(i.name for i in self._by_digest.values() if not i.staff)

    def staff_names(self) -> set[str]:
        self.refresh()
        return {i.name for i in self._by_digest.values() if i.staff}


def _read_tokens(path: Path):
    """(digest, Identity) per row of the tokens file."""
    for name, _token, role, token_digest in _rows(path):
        yield token_digest, Identity(name, role, token_digest)


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
        name = csv_safe.read_cell((row.get(key) or "").strip())
        token = csv_safe.read_cell((row.get("token") or "").strip())
        role = (row.get("role") or "student").strip().lower() or "student"
        if not STUDENT_NAME.match(name):
            raise AuthError(f"{where}: name '{name}' must be 1-128 letters, digits or ._@+-")
        if role not in ("student", "staff"):
            raise AuthError(f"{where}: role must be student or staff (got '{role}')")
        if token.startswith("sha256:"):
            token_digest = token[len("sha256:") :].lower()
            if len(token_digest) != 64 or any(c not in "0123456789abcdef" for c in token_digest):
                raise AuthError(f"{where}: sha256: must be followed by 64 hex digits")
        elif len(token) < MIN_TOKEN:
            raise AuthError(f"{where}: the token of '{name}' must be at least {MIN_TOKEN} characters")
        else:
            token_digest = digest(token)
        yield name, token, role, token_digest


def new_token() -> str:
    """A random token that no spreadsheet reads as a formula (it never starts with '-')."""
    while True:
        token = secrets.token_urlsafe(24)
        if not token.startswith(csv_safe.FORMULA_START):
            return token


def write_tokens(names: list[str], out: Path, role: str = "student", revoke: list[str] = ()) -> tuple[list, list]:
    """Add a row with a fresh token to OUT (a tokens CSV, created if missing) for each of NAMES it lacks, after
    taking out the rows of REVOKE (their tokens stop working; give one of them a new token by naming it in
    both); returns (names added, names revoked). Other rows, tokens included, are kept as they are. The file
    is replaced at once (a service reading it never sees half of it)."""
    rows = [(n, t, r) for n, t, r, _d in _rows(out)] if out.exists() else []
    revoked = [n for n in dict.fromkeys(revoke) if any(r[0] == n for r in rows)]
    rows = [r for r in rows if r[0] not in set(revoke)]
    have = {n for n, _t, _r in rows}
    added = [n for n in dict.fromkeys(names) if n not in have]
    for name in added:
        if not STUDENT_NAME.match(name):
            raise AuthError(f"name '{name}' must be 1-128 letters, digits or ._@+-")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    with open(tmp, "w", newline="", encoding="utf-8") as f:
        tmp.chmod(0o600)  # the tokens are secrets: only their owner reads the file
        w = csv_safe.writer(f)
        w.writerow(["name", "token", "role"])
        w.writerows(rows)
        w.writerows((name, new_token(), role) for name in added)
    tmp.replace(out)
    return added, revoked


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
        raise RateLimited(
            f"you already have {max_pending} submission(s) waiting or being judged; submit again when one is done", 30
        )
    if rate is None:
        return
    count, seconds = rate
    now = dt.datetime.now(dt.UTC)
    since = (now - dt.timedelta(seconds=seconds)).isoformat(timespec="milliseconds")
    n, oldest = store.submitted_since(who.name, since)
    if n >= count:
        wait = seconds
        if oldest:
            wait = int((dt.datetime.fromisoformat(oldest) + dt.timedelta(seconds=seconds) - now).total_seconds()) + 1
        raise RateLimited(
            f"at most {count} submission(s) per {_period(seconds)}; try again in {max(wait, 1)} s", max(wait, 1)
        )


def _period(seconds: int) -> str:
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds % size == 0:
            n = seconds // size
            return unit if n == 1 else f"{n} {unit}s"
    return f"{seconds} s"
