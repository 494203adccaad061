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

The grading service (``judge serve``, judge.service) keeps its jobs in the
same file (the ``jobs`` table): a job is queued, running or done; finishing
one writes its report and its result row in one transaction, guarded by its
status, so a job is finished exactly once; a service that restarts finds the
jobs it left running and queues them again (judge.service.runner). The
service's threads share one connection, serialized by ``Store.lock``.

The schema grows by numbered migrations (``MIGRATIONS``, SQLite's
``user_version``): a store written by an older judge is brought up to date
when it is opened, in one transaction, so an existing state directory keeps
working; the staff's records (judge.grading.course_record) and the service's
login sessions live in the tables they add.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import sqlite3
import threading
from pathlib import Path

from judge.verdicts import Verdict

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
CREATE TABLE IF NOT EXISTS jobs (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,  -- the queue's order
    id           TEXT NOT NULL UNIQUE,               -- what clients see: random, not guessable
    student      TEXT NOT NULL,
    problem      INTEGER NOT NULL,
    filename     TEXT NOT NULL,
    sha256       TEXT NOT NULL,
    source       BLOB NOT NULL,
    seed         INTEGER,         -- a seed a staff client gave (the --forward clients); NULL: the store's seed
    status       TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done')),
    attempts     INTEGER NOT NULL DEFAULT 0,         -- times it was started (a restart mid-job starts it again)
    verdict      TEXT,
    report       TEXT,            -- the judge's report without its seed, once done
    cached       INTEGER NOT NULL DEFAULT 0,         -- 1: an identical earlier submission's result, not judged again
    submitted_at TEXT NOT NULL,
    started_at   TEXT,
    finished_at  TEXT
);
CREATE INDEX IF NOT EXISTS jobs_by_status ON jobs(status, seq);
CREATE INDEX IF NOT EXISTS jobs_by_student ON jobs(student, seq);
"""

# Each step brings a store from the version before it (its index) to the next; a fresh store runs them all.
MIGRATIONS = [
    # 1: the staff's tools (regrades, overrides, extensions, which submission counts), display names and the
    # service's login sessions. A job judged with its own seed (a --forward client's) is not the course's
    # record: a regrade must not judge it with the store's. Jobs stored before the column: such a job is one
    # whose file has no result row (the --forward clients' are not recorded there).
    """
    ALTER TABLE jobs ADD COLUMN own_seed INTEGER NOT NULL DEFAULT 0;
    UPDATE jobs SET own_seed = 1 WHERE seed IS NOT NULL OR (status = 'done' AND NOT EXISTS (
        SELECT 1 FROM results r WHERE r.student = jobs.student AND r.problem = jobs.problem
                                 AND r.sha256 = jobs.sha256));
    ALTER TABLE jobs ADD COLUMN regrade INTEGER NOT NULL DEFAULT 0;   -- the regrade round that queued it again
    ALTER TABLE results ADD COLUMN regrade INTEGER NOT NULL DEFAULT 0;  -- the round it was judged in
    CREATE INDEX IF NOT EXISTS jobs_by_key ON jobs(student, problem, sha256);
    CREATE TABLE IF NOT EXISTS regrades (
        round INTEGER PRIMARY KEY AUTOINCREMENT, problem INTEGER NOT NULL, jobs INTEGER NOT NULL,
        by TEXT NOT NULL, at TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS overrides (       -- every override ever made; the latest per key is in force
        id INTEGER PRIMARY KEY AUTOINCREMENT, student TEXT NOT NULL, problem INTEGER NOT NULL,
        score REAL,                              -- NULL: the override was withdrawn
        reason TEXT NOT NULL, by TEXT NOT NULL, at TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS extensions (      -- every extension granted; the latest per student is in force
        id INTEGER PRIMARY KEY AUTOINCREMENT, student TEXT NOT NULL,
        deadline TEXT,                           -- NULL: withdrawn (the rubric's deadline again)
        reason TEXT NOT NULL, by TEXT NOT NULL, at TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS counting (        -- which submission counts per problem (default best)
        problem INTEGER PRIMARY KEY, counts TEXT NOT NULL CHECK (counts IN ('best', 'last')),
        by TEXT NOT NULL, at TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS people (          -- what a student chose to be called on the leaderboard
        name TEXT PRIMARY KEY, display_name TEXT UNIQUE COLLATE NOCASE,
        on_leaderboard INTEGER NOT NULL DEFAULT 0, at TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS sessions (        -- logins of the pages: the SHA-256 of the cookie's random id
        digest TEXT PRIMARY KEY, name TEXT NOT NULL, token TEXT NOT NULL, expires TEXT NOT NULL);
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)

JOB_COLUMNS = (
    "seq, id, student, problem, filename, sha256, status, attempts, verdict, report, cached, "
    "submitted_at, started_at, finished_at, regrade"
)


def _statements(script: str) -> list[str]:
    """A migration's statements, one by one (executescript would commit the transaction it runs in)."""
    out, part = [], ""
    for line in script.splitlines():
        line = line.split("--", 1)[0]
        part += line + "\n"
        if line.rstrip().endswith(";") and sqlite3.complete_statement(part):
            out.append(part.strip())
            part = ""
    return out + ([part.strip()] if part.strip() else [])


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


def _locked(method):
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with self.lock:
            return method(self, *args, **kwargs)

    return wrapper


class Store:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # isolation_level=None: autocommit; each write below is its own transaction.
        # check_same_thread=False: the service's threads share this connection, one at a time (self.lock).
        self.db = sqlite3.connect(self.path, isolation_level=None, timeout=30, check_same_thread=False)
        self.lock = threading.RLock()
        self.db.execute("PRAGMA journal_mode=WAL")
        # FULL: a result is on disk when the insert returns (NORMAL would survive a
        # killed process too, but not a power cut at a deadline).
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.executescript(SCHEMA)
        self._migrate()

    def _migrate(self) -> None:
        """Bring a store written by an older judge up to SCHEMA_VERSION, each step in one transaction (another
        process opening the same store at once waits, then finds the work done)."""
        while True:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                version = self.db.execute("PRAGMA user_version").fetchone()[0]
                if version >= SCHEMA_VERSION:
                    self.db.execute("COMMIT")
                    return
                for statement in _statements(MIGRATIONS[version]):
                    self.db.execute(statement)
                self.db.execute(f"PRAGMA user_version = {version + 1}")
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise

    def close(self) -> None:
        self.db.close()

    # ------------------------------------------------------------------ meta

    @_locked
    def meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    @_locked
    def set_meta_once(self, key: str, value: str) -> str:
        """Store VALUE under KEY unless one is there; returns the stored value (the first run's wins)."""
        self.db.execute("INSERT OR IGNORE INTO meta(key, value) VALUES (?, ?)", (key, value))
        return self.meta(key)

    # ------------------------------------------------------------------ results

    @_locked
    def done_keys(self) -> set[tuple[str, int, str]]:
        rows = self.db.execute("SELECT student, problem, sha256 FROM results WHERE verdict != 'IE'")
        return {(s, p, h) for s, p, h in rows}

    @_locked
    def put(
        self, student: str, problem: int, sha256: str, path: str | None, report: dict, graded: dict, regrade: int = 0
    ) -> None:
        """Record one result (the judge's report, the seed removed; the score under the rubric). A row is
        replaced only when it is an IE, or when this result was judged in a later regrade round (REGRADE)."""
        report = {k: v for k, v in report.items() if k != "seed"}
        speedup = graded["speed"].get("speedup")
        self.db.execute(
            """INSERT INTO results(student, problem, sha256, path, verdict, score, max_score, speedup, elapsed,
                                   report, graded_at, regrade)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
               ON CONFLICT(student, problem, sha256) DO UPDATE SET
                   path=excluded.path, verdict=excluded.verdict, score=excluded.score,
                   max_score=excluded.max_score, speedup=excluded.speedup, elapsed=excluded.elapsed,
                   report=excluded.report, graded_at=excluded.graded_at, regrade=excluded.regrade
               WHERE results.verdict = 'IE' OR results.regrade < excluded.regrade""",
            (
                student,
                problem,
                sha256,
                path,
                graded["verdict"],
                graded["score"],
                graded["max_score"],
                speedup if isinstance(speedup, (int, float)) else None,
                report.get("elapsed_seconds"),
                json.dumps(report),
                dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                regrade,
            ),
        )

    @_locked
    def rows(self) -> list[dict]:
        """Every result, with when its file was first and last submitted to the service (``first_at``,
        ``last_at``: None for a result of ``judge grade``, which has no job)."""
        cur = self.db.execute(
            """SELECT student, problem, sha256, path, verdict, score, max_score, speedup, elapsed, report, graded_at,
                      regrade, k.first_at, k.last_at
               FROM results r LEFT JOIN (SELECT student AS ks, problem AS kp, sha256 AS kh,
                                                MIN(submitted_at) AS first_at, MAX(submitted_at) AS last_at
                                         FROM jobs WHERE own_seed = 0 GROUP BY student, problem, sha256) k
                    ON k.ks = r.student AND k.kp = r.problem AND k.kh = r.sha256
               ORDER BY student, problem, graded_at"""
        )
        names = [c[0] for c in cur.description]
        out = []
        for row in cur:
            d = dict(zip(names, row))
            d["report"] = json.loads(d["report"])
            out.append(d)
        return out

    @_locked
    def count(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM results").fetchone()[0]

    # ------------------------------------------------------------------ jobs (the grading service)

    def _job(self, row, names) -> dict:
        d = dict(zip(names, row))
        if d.get("report") is not None:
            d["report"] = json.loads(d["report"])
        if "cached" in d:
            d["cached"] = bool(d["cached"])
        return d

    @_locked
    def add_job(
        self,
        job_id: str,
        student: str,
        problem: int,
        filename: str,
        sha256: str,
        source: bytes,
        seed: int | None = None,
    ) -> dict:
        self.db.execute(
            "INSERT INTO jobs(id, student, problem, filename, sha256, source, seed, own_seed, status, "
            "submitted_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?)",
            (job_id, student, problem, filename, sha256, source, seed, int(seed is not None), now_iso()),
        )
        return self.job(job_id)

    @_locked
    def job(self, job_id: str, *, source: bool = False, report: bool = True) -> dict | None:
        cols = (JOB_COLUMNS if report else JOB_COLUMNS.replace("report, ", "")) + (", source, seed" if source else "")
        cur = self.db.execute(f"SELECT {cols} FROM jobs WHERE id = ?", (job_id,))
        row = cur.fetchone()
        return self._job(row, [c[0] for c in cur.description]) if row else None

    @_locked
    def jobs(
        self,
        student: str | None = None,
        *,
        status: str | None = None,
        problem: int | None = None,
        limit: int = 200,
        reports: bool = False,
    ) -> list[dict]:
        """Jobs, newest first (the report only when REPORTS)."""
        cols = JOB_COLUMNS if reports else JOB_COLUMNS.replace("report, ", "")
        where, args = [], []
        for column, value in (("student", student), ("status", status), ("problem", problem)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        sql = f"SELECT {cols} FROM jobs" + (f" WHERE {' AND '.join(where)}" if where else "")
        cur = self.db.execute(sql + " ORDER BY seq DESC LIMIT ?", (*args, limit))
        names = [c[0] for c in cur.description]
        return [self._job(r, names) for r in cur.fetchall()]

    @_locked
    def claim_job(self) -> dict | None:
        """The next queued job, marked running (its source and seed included); None when none is queued.

        Fair between students: the oldest job of a student with the fewest jobs running goes first, so one
        student's burst does not hold everyone else's submissions back; jobs a regrade queued again come
        after every new submission.
        """
        self.db.execute("BEGIN IMMEDIATE")
        try:
            row = self.db.execute(
                """SELECT j.id FROM jobs j WHERE j.status = 'queued'
                   ORDER BY (SELECT COUNT(*) FROM jobs r WHERE r.student = j.student AND r.status = 'running'),
                            j.regrade > 0, j.seq LIMIT 1"""
            ).fetchone()
            if row is None:
                self.db.execute("COMMIT")
                return None
            self.db.execute(
                "UPDATE jobs SET status = 'running', attempts = attempts + 1, started_at = ? WHERE id = ?",
                (now_iso(), row[0]),
            )
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        return self.job(row[0], source=True)

    @_locked
    def finish_job(
        self, job_id: str, report: dict, result: tuple[dict, str | None] | None = None, *, cached: bool = False
    ) -> bool:
        """Record a job's report, once: True when this call finished it, False when it was already done.

        RESULT (graded, path): also the job's row in ``results`` (the course's record, as ``judge grade``
        writes it), in the same transaction. A job's own seed is forgotten once it is done.
        """
        report = {k: v for k, v in report.items() if k != "seed"}
        self.db.execute("BEGIN IMMEDIATE")
        try:
            cur = self.db.execute(
                "UPDATE jobs SET status = 'done', verdict = ?, report = ?, cached = ?, seed = NULL, "
                "finished_at = ? WHERE id = ? AND status != 'done'",
                (report.get("verdict", Verdict.IE.value), json.dumps(report), int(cached), now_iso(), job_id),
            )
            if cur.rowcount == 1 and result is not None:
                job = self.db.execute(
                    "SELECT student, problem, sha256, regrade FROM jobs WHERE id = ?", (job_id,)
                ).fetchone()
                graded, path = result
                self.put(job[0], job[1], job[2], path, report, graded, regrade=job[3])
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        return cur.rowcount == 1

    @_locked
    def requeue_running(self) -> list[dict]:
        """Jobs a stopped service left running, queued again (they start from scratch); returns them."""
        cur = self.db.execute(f"SELECT {JOB_COLUMNS.replace('report, ', '')} FROM jobs WHERE status = 'running'")
        names = [c[0] for c in cur.description]
        left = [self._job(r, names) for r in cur.fetchall()]
        self.db.execute("UPDATE jobs SET status = 'queued' WHERE status = 'running'")
        return left

    @_locked
    def queue_position(self, seq: int) -> int:
        """How many queued jobs are ahead of the job SEQ (roughly: the queue is fair between students)."""
        return self.db.execute("SELECT COUNT(*) FROM jobs WHERE status = 'queued' AND seq < ?", (seq,)).fetchone()[0]

    @_locked
    def job_counts(self) -> dict[str, int]:
        counts = {"queued": 0, "running": 0, "done": 0}
        counts.update(dict(self.db.execute("SELECT status, COUNT(*) FROM jobs GROUP BY status").fetchall()))
        return counts

    @_locked
    def submitted_since(self, student: str, since: str) -> tuple[int, str | None]:
        """(jobs STUDENT submitted at or after SINCE (ISO time), the oldest of them's time)."""
        return tuple(
            self.db.execute(
                "SELECT COUNT(*), MIN(submitted_at) FROM jobs WHERE student = ? AND submitted_at >= ?", (student, since)
            ).fetchone()
        )

    @_locked
    def pending_of(self, student: str) -> int:
        """STUDENT's own submissions waiting or being judged (not those a regrade queued again)."""
        return self.db.execute(
            "SELECT COUNT(*) FROM jobs WHERE student = ? AND status != 'done' AND regrade = 0", (student,)
        ).fetchone()[0]

    @_locked
    def result_for(self, student: str, problem: int, sha256: str, regrade: int = 0) -> dict | None:
        """The stored result of this very file (not an IE, judged in regrade round REGRADE or later), or None."""
        cur = self.db.execute(
            "SELECT report, path FROM results WHERE student = ? AND problem = ? AND sha256 = ? "
            "AND verdict != 'IE' AND regrade >= ?",
            (student, problem, sha256, regrade),
        )
        row = cur.fetchone()
        return {"report": json.loads(row[0]), "path": row[1]} if row else None

    @_locked
    def regrade(self, problem: int, by: str) -> dict:
        """Queue every finished job of PROBLEM judged with the store's seed again, to be judged afresh by the
        judge as it is now (no stored result is reused), in one transaction; returns the round."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            at = now_iso()
            cur = self.db.execute("INSERT INTO regrades(problem, jobs, by, at) VALUES (?, 0, ?, ?)", (problem, by, at))
            round_ = cur.lastrowid
            n = self.db.execute(
                "UPDATE jobs SET status = 'queued', attempts = 0, cached = 0, regrade = ?, "
                "started_at = NULL WHERE problem = ? AND status = 'done' AND own_seed = 0",
                (round_, problem),
            ).rowcount
            self.db.execute("UPDATE regrades SET jobs = ? WHERE round = ?", (n, round_))
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        return {"round": round_, "problem": problem, "jobs": n, "by": by, "at": at}

    @_locked
    def regrades(self, problem: int | None = None) -> list[dict]:
        cur = self.db.execute(
            "SELECT round, problem, jobs, by, at FROM regrades"
            + (" WHERE problem = ?" if problem is not None else "")
            + " ORDER BY round",
            (problem,) if problem is not None else (),
        )
        return [dict(zip(("round", "problem", "jobs", "by", "at"), r)) for r in cur.fetchall()]
