-- The grading store as main wrote it at 9edee07, before the schema had versions (user_version 0).
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

