"""What course staff decided, kept in the grading store beside the results: extensions, overrides, which
submission counts, and the names students chose for the leaderboard.

Every decision is a row; nothing is updated in place where history matters:

* an extension (a student's own deadline, with a reason) is a row in ``extensions``; the latest row of a
  student is in force, and a row without a deadline withdraws the extension;
* an override (a score given by staff instead of the judged one, with a reason) is a row in ``overrides``;
  the latest row of a (student, problem) is in force, and a row without a score withdraws it; the table is
  the override's history;
* ``counting``: per problem, whether a student's best submission counts (the default) or their last;
* ``people``: a student's display name, and whether it is shown on the leaderboard (anonymous by default).

The store (judge.grading.store) creates the tables; this module reads and writes them under its lock.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import unicodedata

from judge.grading.store import Store, now_iso

COUNTS = ("best", "last")
MAX_REASON = 500
MAX_DISPLAY = 40


class RecordError(ValueError):
    """A staff decision or a display name that cannot be recorded: one line, for a 400."""


def _reason(reason) -> str:
    reason = " ".join(str(reason or "").split())
    if not reason:
        raise RecordError("give a reason (it is kept in the store's history)")
    if len(reason) > MAX_REASON:
        raise RecordError(f"the reason is over {MAX_REASON} characters")
    return reason


def parse_when(text: str) -> dt.datetime:
    """An ISO date-time with a zone (``2026-12-20T23:59:00Z``, ``...+01:00``); RecordError otherwise."""
    try:
        when = dt.datetime.fromisoformat(str(text).strip().replace("Z", "+00:00"))
    except ValueError:
        raise RecordError(f"'{text}' is not an ISO date-time, e.g. 2026-12-20T23:59:00Z") from None
    if when.tzinfo is None:
        raise RecordError(f"'{text}' needs a time zone, e.g. 2026-12-20T23:59:00Z")
    return when.astimezone(dt.UTC)


class CourseRecord:
    def __init__(self, store: Store):
        self.store = store

    # ------------------------------------------------------------------ extensions

    def extend(self, student: str, deadline: dt.datetime | None, reason: str, by: str) -> dict:
        """Give STUDENT their own DEADLINE (None: withdraw it)."""
        row = {
            "student": student,
            "deadline": deadline.isoformat() if deadline else None,
            "reason": _reason(reason),
            "by": by,
            "at": now_iso(),
        }
        with self.store.lock:
            self.store.db.execute(
                "INSERT INTO extensions(student, deadline, reason, by, at) VALUES (?, ?, ?, ?, ?)", tuple(row.values())
            )
        return row

    def extensions(self) -> dict[str, dict]:
        """Student -> the extension in force (withdrawn ones left out)."""
        with self.store.lock:
            rows = self.store.db.execute(
                "SELECT student, deadline, reason, by, at FROM extensions e WHERE id = "
                "(SELECT MAX(id) FROM extensions x WHERE x.student = e.student)"
            ).fetchall()
        return {r[0]: dict(zip(("student", "deadline", "reason", "by", "at"), r)) for r in rows if r[1]}

    def deadline_of(self, student: str, course: dt.datetime | None) -> dt.datetime | None:
        """STUDENT's deadline: their extension's, else the course's (the rubric's)."""
        with self.store.lock:
            row = self.store.db.execute(
                "SELECT deadline FROM extensions WHERE student = ? ORDER BY id DESC LIMIT 1", (student,)
            ).fetchone()
        return dt.datetime.fromisoformat(row[0]) if row and row[0] else course

    # ------------------------------------------------------------------ overrides

    def override(self, student: str, problem: int, score: float | None, reason: str, by: str) -> dict:
        """Record SCORE for STUDENT's PROBLEM instead of the judged one (None: withdraw the override)."""
        if score is not None:
            if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score) or score < 0:
                raise RecordError("the score must be a number >= 0")
            score = float(score)
        row = {
            "student": student,
            "problem": int(problem),
            "score": score,
            "reason": _reason(reason),
            "by": by,
            "at": now_iso(),
        }
        with self.store.lock:
            self.store.db.execute(
                "INSERT INTO overrides(student, problem, score, reason, by, at) VALUES (?, ?, ?, ?, ?, ?)",
                tuple(row.values()),
            )
        return row

    def overrides(self) -> dict[tuple[str, int], dict]:
        """(student, problem) -> the override in force (withdrawn ones left out)."""
        with self.store.lock:
            rows = self.store.db.execute(
                "SELECT student, problem, score, reason, by, at FROM overrides o WHERE id = "
                "(SELECT MAX(id) FROM overrides x WHERE x.student = o.student AND x.problem = o.problem)"
            ).fetchall()
        names = ("student", "problem", "score", "reason", "by", "at")
        return {(r[0], r[1]): dict(zip(names, r)) for r in rows if r[2] is not None}

    def override_history(self, student: str | None = None, problem: int | None = None) -> list[dict]:
        where, args = [], []
        for column, value in (("student", student), ("problem", problem)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        with self.store.lock:
            rows = self.store.db.execute(
                "SELECT id, student, problem, score, reason, by, at FROM overrides"
                + (f" WHERE {' AND '.join(where)}" if where else "")
                + " ORDER BY id",
                args,
            ).fetchall()
        return [dict(zip(("id", "student", "problem", "score", "reason", "by", "at"), r)) for r in rows]

    # ------------------------------------------------------------------ which submission counts

    def set_counting(self, problem: int, counts: str, by: str) -> dict:
        if counts not in COUNTS:
            raise RecordError(f"counts must be best or last (got '{counts}')")
        row = {"problem": int(problem), "counts": counts, "by": by, "at": now_iso()}
        with self.store.lock:
            self.store.db.execute(
                "INSERT INTO counting(problem, counts, by, at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(problem) DO UPDATE SET counts = excluded.counts, by = excluded.by, "
                "at = excluded.at",
                tuple(row.values()),
            )
        return row

    def counting(self) -> dict[int, str]:
        """Problem -> "best" or "last" (problems not listed: best)."""
        with self.store.lock:
            return dict(self.store.db.execute("SELECT problem, counts FROM counting").fetchall())

    # ------------------------------------------------------------------ display names

    def set_display(self, name: str, display_name: str | None, on_leaderboard: bool) -> dict:
        """What NAME is called on the leaderboard: DISPLAY_NAME when ON_LEADERBOARD, else anonymous."""
        display = clean_display(display_name) if display_name else None
        if on_leaderboard and not display:
            raise RecordError("choose a display name to be shown on the leaderboard")
        with self.store.lock:
            clash = (
                display
                and self.store.db.execute(
                    "SELECT name FROM people WHERE display_name = ? AND name != ?", (display, name)
                ).fetchone()
            )
            if clash:
                raise RecordError(f"the display name '{display}' is taken")
            self.store.db.execute(
                "INSERT INTO people(name, display_name, on_leaderboard, at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(name) DO UPDATE SET display_name = excluded.display_name, "
                "on_leaderboard = excluded.on_leaderboard, at = excluded.at",
                (name, display, int(bool(on_leaderboard)), now_iso()),
            )
        return {"display_name": display, "on_leaderboard": bool(on_leaderboard)}

    def people(self) -> dict[str, dict]:
        with self.store.lock:
            rows = self.store.db.execute("SELECT name, display_name, on_leaderboard FROM people").fetchall()
        return {n: {"display_name": d, "on_leaderboard": bool(s)} for n, d, s in rows}


def clean_display(text: str) -> str:
    """A display name: 1-40 printable characters, spaces folded; RecordError otherwise."""
    text = unicodedata.normalize("NFC", " ".join(str(text).split()))
    if not text:
        raise RecordError("a display name cannot be empty")
    if len(text) > MAX_DISPLAY:
        raise RecordError(f"a display name is at most {MAX_DISPLAY} characters")
    if any(unicodedata.category(c)[0] == "C" for c in text):
        raise RecordError("a display name has printable characters only")
    if re.fullmatch(r"(?i)anonymous|you|staff", text):
        raise RecordError(f"'{text}' cannot be a display name")
    return text
