"""The grading store: SQLite in WAL mode, one row per (student, problem, submission sha256).

Every result is committed the moment its job ends, so a grading run killed at
any point keeps everything finished before the kill. The primary key makes a
second insert of the same submission impossible: a rerun skips what is done
and judges only the rest (the jobs in flight at the kill included). A row whose
verdict is IE (a failure of the judge, not of the student) is not "done": the
next run judges it again and replaces it.

Only the driver process writes (results come back to it from the executors),
so there is a single writer; WAL lets a reader (an export, a second terminal)
read while it writes.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    student    TEXT NOT NULL,
    problem    INTEGER NOT NULL,
    sha256     TEXT NOT NULL,
    path       TEXT,
    verdict    TEXT NOT NULL,
    score      REAL NOT NULL,
    max_score  REAL NOT NULL,
    speedup    REAL,
    elapsed    REAL,
    report     TEXT NOT NULL,
    graded_at  TEXT NOT NULL,
    PRIMARY KEY (student, problem, sha256)
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


class Store:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # isolation_level=None: autocommit; each write below is its own transaction.
        self.db = sqlite3.connect(self.path, isolation_level=None, timeout=30)
        self.db.execute("PRAGMA journal_mode=WAL")
        # FULL: a result is on disk when the insert returns (NORMAL would survive a
        # killed process too, but not a power cut at a deadline).
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.executescript(SCHEMA)

    def close(self) -> None:
        self.db.close()

    # ------------------------------------------------------------------ meta

    def meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta_once(self, key: str, value: str) -> str:
        """Store VALUE under KEY unless one is there; returns the stored value (the first run's wins)."""
        self.db.execute("INSERT OR IGNORE INTO meta(key, value) VALUES (?, ?)", (key, value))
        return self.meta(key)

    # ------------------------------------------------------------------ results

    def done_keys(self) -> set[tuple[str, int, str]]:
        rows = self.db.execute("SELECT student, problem, sha256 FROM results WHERE verdict != 'IE'")
        return {(s, p, h) for s, p, h in rows}

    def put(self, student: str, problem: int, sha256: str, path: str | None, report: dict, graded: dict) -> None:
        """Record one result (the judge's report, the seed removed; the score under the rubric)."""
        report = {k: v for k, v in report.items() if k != "seed"}
        speedup = graded["speed"].get("speedup")
        self.db.execute(
            """INSERT INTO results(student, problem, sha256, path, verdict, score, max_score, speedup, elapsed,
                                   report, graded_at)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
               ON CONFLICT(student, problem, sha256) DO UPDATE SET
                   path=excluded.path, verdict=excluded.verdict, score=excluded.score,
                   max_score=excluded.max_score, speedup=excluded.speedup, elapsed=excluded.elapsed,
                   report=excluded.report, graded_at=excluded.graded_at
               WHERE results.verdict = 'IE'""",
            (student, problem, sha256, path, graded["verdict"], graded["score"], graded["max_score"],
             speedup if isinstance(speedup, (int, float)) else None, report.get("elapsed_seconds"),
             json.dumps(report), dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")))

    def rows(self) -> list[dict]:
        cur = self.db.execute("SELECT student, problem, sha256, path, verdict, score, max_score, speedup, elapsed, "
                              "report, graded_at FROM results ORDER BY student, problem, graded_at")
        names = [c[0] for c in cur.description]
        out = []
        for row in cur:
            d = dict(zip(names, row))
            d["report"] = json.loads(d["report"])
            out.append(d)
        return out

    def count(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
