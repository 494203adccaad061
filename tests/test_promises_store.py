"""The grading store's promises (judge.grading.store), on a real SQLite file.

- A job is finished exactly once: a second finish (a restarted service's, a slow worker's) keeps the first report
  and the first result, and says it did nothing.
- A result is kept once per (student, problem, file): a rerun does not overwrite it, except a judge's own failure
  (IE), which the next run judges again and replaces.
- The job's seed and the report's seed are never kept once the job is done.
- The queue is fair between students, and a service that stopped finds the jobs it left running queued again.
- A store is brought to the last schema version when it is opened, each step in one transaction: a step that
  fails leaves the store as it was.
"""

import json

import pytest

from judge.grading.store import Store


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "state" / "results.sqlite")
    yield s
    s.close()


def _graded(verdict, score):
    return {"verdict": verdict, "score": score, "max_score": 100.0, "speed": {"speedup": None}}


def _report(verdict, message, **extra):
    return {"verdict": verdict, "message": message, "seed": 12345, "elapsed_seconds": 1.5, **extra}


def test_finishing_a_job_twice_keeps_the_first_report_and_result(store):
    store.add_job("j1", "alice", 93, "add.py", "h" * 64, b"def add(x, y): ...\n", seed=77)
    claimed = store.claim_job()
    assert claimed["id"] == "j1" and claimed["seed"] == 77 and claimed["source"] == b"def add(x, y): ...\n"
    first = _report("AC", "all tests passed")
    assert store.finish_job("j1", first, (_graded("AC", 70.0), "add.py")) is True
    second = _report("WA", "out: 3 of 8 elements wrong")
    assert store.finish_job("j1", second, (_graded("WA", 20.0), "add.py")) is False
    job = store.job("j1", source=True)
    assert job["status"] == "done" and job["verdict"] == "AC"
    assert job["report"]["message"] == "all tests passed"
    rows = store.rows()
    assert len(rows) == 1 and rows[0]["verdict"] == "AC" and rows[0]["score"] == 70.0
    # Neither the job nor its report keeps a seed once done.
    assert job["seed"] is None and "seed" not in job["report"] and "seed" not in rows[0]["report"]


def test_a_finish_without_a_result_records_the_report_only(store):
    store.add_job("j1", "alice", 93, "add.py", "h", b"x")
    store.claim_job()
    assert store.finish_job("j1", {"verdict": "IE", "message": "the worker could not start"}) is True
    assert store.job("j1")["verdict"] == "IE" and store.rows() == []
    assert store.finish_job("j1", {"verdict": "AC"}) is False
    assert store.job("j1")["verdict"] == "IE"


def test_a_cached_finish_is_marked_so(store):
    store.add_job("j1", "alice", 93, "add.py", "h", b"x")
    store.add_job("j2", "alice", 93, "add.py", "h", b"x")
    store.finish_job("j1", {"verdict": "AC"})
    store.finish_job("j2", {"verdict": "AC"}, cached=True)
    assert store.job("j1")["cached"] is False and store.job("j2")["cached"] is True


def test_a_result_is_kept_once_and_only_an_internal_error_is_replaced(store):
    store.put("alice", 93, "h1", "a.py", _report("IE", "the judge failed"), _graded("IE", 0.0))
    assert ("alice", 93, "h1") not in store.done_keys()  # judged again by the next run
    assert store.result_for("alice", 93, "h1") is None
    store.put("alice", 93, "h1", "a.py", _report("WA", "first"), _graded("WA", 20.0))
    assert ("alice", 93, "h1") in store.done_keys()
    store.put("alice", 93, "h1", "b.py", _report("AC", "second"), _graded("AC", 70.0))
    rows = store.rows()
    assert store.count() == 1 and len(rows) == 1
    assert (rows[0]["verdict"], rows[0]["score"], rows[0]["path"]) == ("WA", 20.0, "a.py")
    assert rows[0]["report"]["message"] == "first" and "seed" not in rows[0]["report"]
    assert store.result_for("alice", 93, "h1") == {"report": rows[0]["report"], "path": "a.py"}
    # Another file, problem or student is another result.
    store.put("alice", 93, "h2", "c.py", _report("AC", ""), _graded("AC", 70.0))
    store.put("alice", 94, "h1", "d.py", _report("AC", ""), _graded("AC", 70.0))
    store.put("bob", 93, "h1", "e.py", _report("AC", ""), _graded("AC", 70.0))
    assert store.count() == 4
    assert store.done_keys() == {("alice", 93, "h1"), ("alice", 93, "h2"), ("alice", 94, "h1"), ("bob", 93, "h1")}


def test_a_results_speedup_is_kept_only_when_it_is_a_number(store):
    graded = _graded("AC", 100.0)
    store.put("alice", 93, "h1", "a.py", _report("AC", ""), {**graded, "speed": {"speedup": 1.25}})
    store.put("alice", 93, "h2", "a.py", _report("AC", ""), {**graded, "speed": {"speedup": "fast"}})
    speedups = {r["sha256"]: r["speedup"] for r in store.rows()}
    assert speedups == {"h1": 1.25, "h2": None}
    assert {r["elapsed"] for r in store.rows()} == {1.5}


def test_the_first_runs_meta_value_wins(store):
    assert store.meta("seed") is None
    assert store.set_meta_once("seed", "first") == "first"
    assert store.set_meta_once("seed", "second") == "first"
    assert store.meta("seed") == "first"


def test_the_queue_is_fair_between_students_and_first_in_first_out_for_each(store):
    for i in range(3):
        store.add_job(f"a{i}", "alice", 93, "add.py", f"h{i}", b"x")
    store.add_job("b0", "bob", 93, "add.py", "hb", b"x")
    store.add_job("c0", "carol", 93, "add.py", "hc", b"x")
    # alice's first job goes first (oldest); then, with alice running one, bob's and carol's before her second.
    order = [store.claim_job()["id"] for _ in range(5)]
    assert order == ["a0", "b0", "c0", "a1", "a2"]
    assert store.claim_job() is None
    assert store.job_counts() == {"queued": 0, "running": 5, "done": 0}


def test_a_stopped_service_finds_its_running_jobs_queued_again(store):
    store.add_job("j1", "alice", 93, "add.py", "h1", b"x")
    store.add_job("j2", "bob", 93, "add.py", "h2", b"x")
    store.add_job("j3", "carol", 93, "add.py", "h3", b"x")
    store.claim_job()
    store.claim_job()
    store.finish_job("j2", {"verdict": "AC"})
    left = store.requeue_running()
    assert [j["id"] for j in left] == ["j1"]
    assert store.job_counts() == {"queued": 2, "running": 0, "done": 1}
    again = store.claim_job()
    assert again["id"] == "j1" and again["attempts"] == 2  # started twice
    assert store.job("j2")["status"] == "done"


def test_queue_position_pending_and_submissions_since(store):
    for i in range(3):
        store.add_job(f"j{i}", "alice", 93, "add.py", f"h{i}", b"x")
    store.add_job("k0", "bob", 93, "add.py", "hb", b"x")
    seqs = {j["id"]: j["seq"] for j in store.jobs(limit=10)}
    assert [store.queue_position(seqs[k]) for k in ("j0", "j1", "j2", "k0")] == [0, 1, 2, 3]
    store.claim_job()  # j0 runs: no longer queued
    assert store.queue_position(seqs["k0"]) == 2
    assert store.pending_of("alice") == 3 and store.pending_of("bob") == 1
    store.finish_job("j0", {"verdict": "AC"})
    assert store.pending_of("alice") == 2
    count, oldest = store.submitted_since("alice", "1970-01-01T00:00:00")
    assert count == 3 and oldest == store.job("j0")["submitted_at"]
    assert store.submitted_since("alice", "9999-01-01T00:00:00") == (0, None)


def test_jobs_lists_newest_first_and_filters(store):
    store.add_job("j0", "alice", 93, "add.py", "h0", b"x")
    store.add_job("j1", "bob", 94, "softmax.py", "h1", b"x")
    store.add_job("j2", "alice", 94, "softmax.py", "h2", b"x")
    assert [j["id"] for j in store.jobs()] == ["j2", "j1", "j0"]
    assert [j["id"] for j in store.jobs("alice")] == ["j2", "j0"]
    assert [j["id"] for j in store.jobs(problem=94)] == ["j2", "j1"]
    assert [j["id"] for j in store.jobs("alice", problem=94)] == ["j2"]
    assert [j["id"] for j in store.jobs(limit=1)] == ["j2"]
    store.claim_job()
    assert [j["id"] for j in store.jobs(status="running")] == ["j0"]
    store.finish_job("j0", {"verdict": "AC", "message": "ok"})
    assert "report" not in store.jobs(status="done")[0]
    assert store.jobs(status="done", reports=True)[0]["report"] == {"verdict": "AC", "message": "ok"}
    assert "report" not in store.job("j0", report=False) and "source" not in store.job("j0")


def test_a_failed_finish_leaves_the_job_as_it_was(store, monkeypatch):
    store.add_job("j1", "alice", 93, "add.py", "h1", b"x")
    store.claim_job()

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(store, "put", broken)
    with pytest.raises(RuntimeError):
        store.finish_job("j1", {"verdict": "AC"}, (_graded("AC", 70.0), "add.py"))
    # Rolled back: still running, so a restart judges it again; nothing half-written.
    assert store.job("j1")["status"] == "running" and store.rows() == []
    monkeypatch.undo()
    assert store.finish_job("j1", {"verdict": "AC"}, (_graded("AC", 70.0), "add.py")) is True


def test_the_store_survives_a_reopen(tmp_path):
    path = tmp_path / "results.sqlite"
    s = Store(path)
    s.add_job("j1", "alice", 93, "add.py", "h1", b"x")
    s.claim_job()
    s.finish_job("j1", {"verdict": "AC"}, (_graded("AC", 70.0), "add.py"))
    s.close()
    again = Store(path)
    try:
        assert again.job("j1")["verdict"] == "AC" and again.count() == 1
        assert json.loads(json.dumps(again.rows()[0]["report"]))["verdict"] == "AC"
    finally:
        again.close()


def test_the_store_makes_its_folders_and_times_its_jobs_in_utc(tmp_path):
    import datetime as dt

    s = Store(tmp_path / "course" / "state" / "results.sqlite")
    try:
        s.add_job("j1", "alice", 93, "add.py", "h1", b"x")
        submitted = dt.datetime.fromisoformat(s.job("j1")["submitted_at"])
        assert submitted.utcoffset() == dt.timedelta(0)
    finally:
        s.close()


def test_the_services_threads_share_one_store(store):
    import threading

    store.add_job("j1", "alice", 93, "add.py", "h1", b"x")
    seen = []
    t = threading.Thread(target=lambda: seen.append(store.claim_job()["id"]))
    t.start()
    t.join()
    assert seen == ["j1"] and store.job("j1")["status"] == "running"


def test_a_migrations_statements_are_split_where_sqlite_says_one_ends():
    from judge.grading.store import _statements

    script = """CREATE TABLE a (x TEXT); -- a comment; with a semicolon
    CREATE TRIGGER t AFTER INSERT ON a BEGIN
        INSERT INTO a VALUES ('from the trigger;
    still the string');
    END;
    INSERT INTO a VALUES ('last, with no semicolon')"""
    parts = _statements(script)
    assert [p.split()[:2] for p in parts] == [["CREATE", "TABLE"], ["CREATE", "TRIGGER"], ["INSERT", "INTO"]]
    assert "comment" not in parts[0] and parts[1].endswith("END;") and parts[2].endswith("no semicolon')")
    import sqlite3

    db = sqlite3.connect(":memory:")
    for p in parts:
        db.execute(p)
    assert db.execute("SELECT COUNT(*) FROM a").fetchone()[0] == 2


def test_a_store_is_at_the_last_schema_version_and_a_failed_migration_changes_nothing(tmp_path):
    import sqlite3
    from pathlib import Path

    from judge.grading.store import MIGRATIONS, SCHEMA_VERSION

    fresh = Store(tmp_path / "fresh.sqlite")
    assert fresh.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == len(MIGRATIONS)
    fresh.close()
    # An old store that a migration cannot bring up to date (a column it adds is there already): the step is one
    # transaction, so the store is left as it was, at its old version, and the error is raised.
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.executescript((Path(__file__).parent / "data" / "store_schema_v0.sql").read_text())
    db.execute("ALTER TABLE results ADD COLUMN regrade INTEGER")
    db.commit()
    db.close()
    with pytest.raises(sqlite3.OperationalError, match="duplicate column name: regrade"):
        Store(path)
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 0
        assert "own_seed" not in {row[1] for row in db.execute("PRAGMA table_info(jobs)")}
        assert db.execute("SELECT name FROM sqlite_master WHERE name = 'regrades'").fetchone() is None
    finally:
        db.close()
