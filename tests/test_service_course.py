"""The grading service as a course runs it, through its API against a real uvicorn on localhost:
fairness to students (a hidden group shows in nothing they see), the staff's tools and totals, tokens that
change without a restart, sessions, errors in one shape, and the start command on a host without a GPU.

Jobs judge answers problems (101-104: a TOML file read as data, about a second each). Nothing is mocked.
"""

import http.client
import json
import re
import sqlite3
import subprocess
import sys
import time
import urllib.parse

import pytest
from service_helpers import ROOT, Served, tokens_file

from judge.problems import find_problem

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

P101 = find_problem("101")
SECRET = "course-tests-secret-0xC0FFEE"
PEOPLE = {
    "ann01": "ann01-token-0123456789ab",
    "ben02": "ben02-token-0123456789ab",
    "cat03": "cat03-token-0123456789ab",
    "ta": "ta-token-0123456789abcdef",
}
EXACT = (P101.directory / "submissions" / "accepted" / "exact.toml").read_text()
HIDDEN_WRONG = EXACT.replace("programs_big = 1025", "programs_big = 1777")  # wrong only in a hidden part
WRONG = (P101.directory / "submissions" / "wrong_answer" / "forgot_partial_program.toml").read_text()


def rubric(tmp_path, deadline: str, extra: str = "") -> str:
    path = tmp_path / f"rubric-{deadline[:4]}.toml"
    path.write_text(
        f'deadline = {deadline}\nsecret_seed = "{SECRET}"\n[problems.101]\n'
        'visible_before_deadline = ["programs", "masked_lanes"]\nvisible_after_deadline = "all"\n' + extra
    )
    return str(path)


def masked(thing, ids=(), names=()) -> str:
    """THING as text with what may differ between two students' files masked: ids, names, times, hashes."""
    text = (
        thing
        if isinstance(thing, str)
        else thing.decode()
        if isinstance(thing, bytes)
        else json.dumps(thing, sort_keys=True)
    )
    for i in ids:
        text = text.replace(i, "<ID>")
    for n in names:
        text = text.replace(n, "<NAME>")
    text = re.sub(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(\+00:00| UTC|Z)?", "<TIME>", text)
    text = re.sub(r'("elapsed_seconds": )[\d.e-]+', r"\1<T>", text)
    text = re.sub(r"judged in [\d.]+ s", "judged in <T> s", text)
    return re.sub(r"\b[0-9a-f]{64}\b", "<SHA>", text)


def without_me(board) -> str:
    """A leaderboard with the viewer's own mark taken off (which row is one's own is not a hidden result)."""
    if isinstance(board, dict):
        return json.dumps([{k: v for k, v in e.items() if k != "me"} for e in board["entries"]])
    return board.replace(' class="me"', ' class=""').replace(' <span class="dim">(you)</span>', "")


def sse_done(served, job, token) -> dict:
    conn = http.client.HTTPConnection(served.url.split("//")[1], timeout=60)
    conn.request("GET", f"/submissions/{job}/events", headers={"Authorization": f"Bearer {token}"})
    response = conn.getresponse()
    name = None
    for raw in response:
        line = raw.decode().rstrip("\n")
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: ") and name == "done":
            conn.close()
            return json.loads(line[6:])
    raise AssertionError("no done event")


def views_of(served, job, token, name) -> dict:
    """Everything a student can read about their job and the problem, masked."""
    ids, names = [job], [name]
    return {
        "status": masked(served.call("GET", f"/submissions/{job}", token=token)[1], ids, names),
        "list": masked(served.call("GET", "/submissions", token=token)[1], ids, names),
        "events": masked(sse_done(served, job, token), ids, names),
        "board": masked(without_me(served.call("GET", "/leaderboard/101", token=token)[1]), ids, names),
        "page": masked(served.call("GET", f"/ui/submissions/{job}", token=token)[1], ids, names),
        "board_page": masked(
            without_me(served.call("GET", "/ui/leaderboard/101", token=token)[1].decode()), ids, names
        ),
    }


def test_a_hidden_group_shows_in_nothing_a_student_reads_until_the_deadline(tmp_path):
    tokens = tokens_file(tmp_path / "tokens.csv", PEOPLE, staff=("ta",))
    before = Served(tmp_path / "state", "--tokens", tokens, "--rubric", rubric(tmp_path, "2999-01-01T00:00:00Z"))
    ann, ben = PEOPLE["ann01"], PEOPLE["ben02"]
    try:
        a = before.submit(ann, 101, EXACT, "101.toml")
        before.wait_done(ann, a)
        b = before.submit(ben, 101, HIDDEN_WRONG, "101.toml")
        before.wait_done(ben, b)
        seen_a, seen_b = views_of(before, a, ann, "ann01"), views_of(before, b, ben, "ben02")
        for what in seen_a:
            assert seen_a[what] == seen_b[what], what
        board = before.call("GET", "/leaderboard/101", token=ben)[1]["entries"]
        assert [e["name"] for e in board] == ["anonymous", "anonymous"]  # both on it, by what they are shown
        staff = before.call("GET", f"/submissions/{b}", token=PEOPLE["ta"])[1]
        assert staff["verdict"] == "WA" and staff["report"]["verdict"] == "WA"  # staff see everything
        # A compile error under the rubric: its headline is the file's message, not an empty group's.
        cat = PEOPLE["cat03"]
        ce = before.submit(
            cat, 101, (P101.directory / "submissions" / "compile_error" / "missing_part.toml").read_text(), "101.toml"
        )
        report = before.wait_done(cat, ce)["report"]
        assert report["verdict"] == "CE" and report["message"].startswith("missing the answer"), report["message"]
        assert b"missing the answer" in before.call("GET", f"/ui/submissions/{ce}", token=cat)[1]
    finally:
        before.stop()
    after = Served(tmp_path / "state", "--tokens", tokens, "--rubric", rubric(tmp_path, "2000-01-01T00:00:00Z"))
    try:
        seen_a, seen_b = views_of(after, a, ann, "ann01"), views_of(after, b, ben, "ben02")
        assert all(seen_a[what] != seen_b[what] for what in ("status", "events", "page", "list"))
        assert after.call("GET", f"/submissions/{b}", token=ben)[1]["verdict"] == "WA"
        board = after.call("GET", "/leaderboard/101", token=ben)[1]["entries"]
        assert [(e["name"], e["me"]) for e in board] == [("anonymous", False)]  # ranked by everything now
    finally:
        after.stop()


def staff_csv(served) -> dict:
    import csv

    code, text, _ = served.call("GET", "/staff/results.csv", token=PEOPLE["ta"])
    assert code == 200
    return {(r["student"], r["problem"]): r for r in csv.DictReader(text.decode().splitlines())}


def test_staff_tools_round_trip_through_the_store_and_show_in_the_csv(tmp_path):
    """Extension, override, best or last, regrade, the roster's totals and formula-safe cells, on a course
    whose deadline has passed."""
    ta, ann, ben = PEOPLE["ta"], PEOPLE["ann01"], PEOPLE["ben02"]
    tokens = tokens_file(tmp_path / "tokens.csv", PEOPLE, staff=("ta",))
    served = Served(
        tmp_path / "state",
        "--tokens",
        tokens,
        "--rubric",
        rubric(tmp_path, "2000-01-01T00:00:00Z", "[problems.102]\n"),
        "--jobs",
        "2",
    )
    try:
        # An extension: ann's deadline is hers; the hidden parts stay hidden for her until then.
        code, ext = served.call(
            "POST",
            "/staff/extensions",
            {"student": "ann01", "deadline": "2999-01-01T00:00:00Z", "reason": "a doctor's note"},
            ta,
        )[:2]
        assert code == 200 and ext["by"] == "ta"
        assert served.call("POST", "/staff/extensions", {"student": "ann01", "reason": "x"}, ann)[0] == 403
        assert (
            served.call("POST", "/staff/extensions", {"student": "ann01", "deadline": "tomorrow", "reason": "x"}, ta)[0]
            == 400
        )
        assert served.call("GET", "/me", token=ann)[1]["deadline"].startswith("2999-01-01")
        jobs = {
            "ann": served.submit(ann, 101, HIDDEN_WRONG, '=HYPERLINK("x").toml'),
            "ben": served.submit(ben, 101, HIDDEN_WRONG, "101.toml"),
            "ben102": served.submit(ben, 102, "x = 1\n", "102.toml"),
        }
        docs = {k: served.wait_done(PEOPLE["ann01" if k == "ann" else "ben02"], j) for k, j in jobs.items()}
        assert docs["ann"]["verdict"] == "AC" and docs["ben"]["verdict"] == "WA"  # her deadline is not past
        rows = staff_csv(served)
        assert rows[("ann01", "101")]["deadline"].startswith("2999") and rows[("ann01", "101")]["late"] == ""
        assert rows[("ben02", "101")]["late"] == "yes"  # after the course's deadline
        assert rows[("ann01", "101")]["path"].startswith("'=HYPERLINK")  # a spreadsheet shows it as text
        # The roster's totals count every course problem (101 and 102) for everyone, submitted or not.
        table = served.call("GET", "/staff/results", token=ta)[1]
        totals = {r["student"]: r["max_score"] for r in table["rows"]}
        assert table["problems"] == [101, 102] and len(set(totals.values())) == 1 and "cat03" in totals
        # An override, then withdrawn: the history keeps both, the CSV shows the one in force.
        override = {"student": "ben02", "problem": 101, "score": 42, "reason": "=a regrade by hand"}
        assert served.call("POST", "/staff/overrides", override, ta)[0] == 200
        row = staff_csv(served)[("ben02", "101")]
        assert (row["score"], row["override_reason"], row["override_by"]) == ("42.0", "'=a regrade by hand", "ta")
        assert float(row["judged_score"]) == 90  # wrong in one part of 10 points
        assert served.call("POST", "/staff/overrides", {**override, "score": None, "reason": "withdrawn"}, ta)[0] == 200
        history = served.call("GET", "/staff/overrides?student=ben02", token=ta)[1]["overrides"]
        assert [h["score"] for h in history] == [42.0, None]
        assert staff_csv(served)[("ben02", "101")]["override_reason"] == ""
        # Best or last: ann submits a wrong file after her right one; "last" counts it.
        right = served.submit(ann, 101, EXACT, "101.toml")
        served.wait_done(ann, right)
        wrong = served.submit(ann, 101, WRONG, "101.toml")
        served.wait_done(ann, wrong)
        best = float(staff_csv(served)[("ann01", "101")]["score"])
        assert served.call("PUT", "/staff/counting/101", {"counts": "last"}, ta)[0] == 200
        row = staff_csv(served)[("ann01", "101")]
        assert row["counts"] == "last" and float(row["score"]) < best
        assert served.call("GET", "/staff/counting", token=ta)[1]["counting"] == {"101": "last"}
        # A regrade: every job of 101 judged again by the judge as it is now. A result an older judge got
        # wrong (written into the store here) is replaced.
        db = sqlite3.connect(tmp_path / "state" / "results.sqlite")
        stale = json.dumps({"verdict": "WA", "message": "an older judge's mistake", "groups": []})
        with db:
            db.execute("UPDATE jobs SET verdict = 'WA', report = ? WHERE id = ?", (stale, right))
            db.execute(
                "UPDATE results SET verdict = 'WA', score = 0, report = ? WHERE student = 'ann01' AND verdict = 'AC'",
                (stale,),
            )
        code, round_ = served.call("POST", "/staff/regrade", {"problem": 101}, ta)[:2]
        assert code == 202 and round_["round"] == 1 and round_["jobs"] == 4
        for job in (jobs["ann"], jobs["ben"], right, wrong):
            served.wait_done(ta, job)
        after = served.call("GET", f"/submissions/{right}", token=ta)[1]
        assert after["verdict"] == "AC" and after["report"]["message"] != "an older judge's mistake"
        assert after["attempts"] == 1
        assert db.execute("SELECT COUNT(*) FROM results WHERE problem = 101 AND regrade = 1").fetchone()[0] == 4
        assert db.execute("SELECT COUNT(*) FROM results WHERE problem = 102 AND regrade = 0").fetchone()[0] == 1
        db.close()
        assert staff_csv(served)[("ann01", "101")]["regraded_at"]
        assert served.call("GET", "/staff/regrades", token=ta)[1]["regrades"][0]["jobs"] == 4
        page = served.call("GET", "/ui/staff", token=ta)[1]
        assert b"a doctor&#39;s note" in page and b"round 1" in page
    finally:
        served.stop()


def login(served, token) -> tuple[int, dict]:
    conn = http.client.HTTPConnection(served.url.split("//")[1], timeout=60)
    conn.request(
        "POST",
        "/ui/login",
        body=urllib.parse.urlencode({"token": token, "next": "/ui/submissions"}),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    response = conn.getresponse()
    response.read()
    conn.close()
    return response.status, dict(response.getheaders())


def as_page(served, cookie: str, path: str = "/ui/submissions") -> int:
    conn = http.client.HTTPConnection(served.url.split("//")[1], timeout=60)
    conn.request("GET", path, headers={"Cookie": cookie})
    response = conn.getresponse()
    response.read()
    conn.close()
    return response.status


def test_tokens_change_without_a_restart_and_sessions_hold_no_token(tmp_path):
    from judge.service.auth import write_tokens

    tokens = tokens_file(tmp_path / "tokens.csv", {"ann01": PEOPLE["ann01"], "ta": PEOPLE["ta"]}, staff=("ta",))
    served = Served(tmp_path / "state", "--tokens", tokens, "--session-hours", "0.003")  # 10.8 s
    try:
        ann = PEOPLE["ann01"]
        status, head = login(served, ann)
        cookie = head["set-cookie"]
        assert status == 303 and cookie.startswith("judge_session=") and ann not in cookie
        assert "HttpOnly" in cookie and "samesite=lax" in cookie.lower() and "Max-Age=10" in cookie
        session = cookie.split(";")[0]
        assert as_page(served, session) == 200
        with sqlite3.connect(tmp_path / "state" / "results.sqlite") as db:  # the store keeps no id, no token
            stored = json.dumps(db.execute("SELECT * FROM sessions").fetchall())
        assert session.split("=", 1)[1] not in stored and ann not in stored
        # A new person's token works at once; a revoked one stops at once, its sessions too.
        added, _ = write_tokens(["dan04"], tokens)
        dan = next(line.split(",")[1] for line in tokens.read_text().splitlines() if line.startswith("dan04,"))
        deadline = time.monotonic() + 10
        while served.call("GET", "/me", token=dan)[0] != 200:
            assert time.monotonic() < deadline, "the new token was not taken"
            time.sleep(0.3)
        r = subprocess.run(
            [sys.executable, "-m", "judge", "serve-tokens", "--revoke", "ann01", "-o", str(tokens)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 0 and "1 revoked" in r.stdout, r.stderr
        deadline = time.monotonic() + 10
        while served.call("GET", "/me", token=ann)[0] != 401:
            assert time.monotonic() < deadline, "the revoked token still works"
            time.sleep(0.3)
        assert as_page(served, session) == 303  # the session went with the token: to the login page
        assert "revoked" in served.log()
        # Sessions expire.
        status, head = login(served, dan)
        fresh = head["set-cookie"].split(";")[0]
        assert as_page(served, fresh) == 200
        time.sleep(11)
        assert as_page(served, fresh) == 303
    finally:
        served.stop()


def test_errors_have_one_shape_everywhere(tmp_path):
    served = Served(tmp_path / "state")
    try:
        for method, path, code in (
            ("GET", "/no/such/thing", 404),
            ("GET", "/static/nope.js", 404),
            ("DELETE", "/submissions", 405),
            ("GET", "/problems/999", 404),
        ):
            got, doc, head = served.call(method, path)
            assert got == code and set(doc) == {"error"} and doc["error"], (path, got, doc)
        code, page, head = served.call("GET", "/ui/nothing-here")
        assert code == 404 and head["content-type"].startswith("text/html")
        code, doc, _ = served.call("PUT", "/me", {"display_name": "x" * 41, "on_leaderboard": True})
        assert code == 400 and "40 characters" in doc["error"]
    finally:
        served.stop()


def test_the_documented_start_command_works_without_a_gpu(tmp_path):
    """`--gpus 0,1 --jobs 2` with no --device, on this host without a GPU: the interpreter, two slots."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU host: tests/gpu/calls has the GPU's side")
    served = Served(tmp_path / "state", "--gpus", "0,1", "--jobs", "2", device=None)
    try:
        health = served.call("GET", "/health")[1]
        assert health["device"] == "cpu" and health["slots"] == 2
        assert "no CUDA GPU here: judging in Triton's interpreter" in served.log()
    finally:
        served.stop()


PRINTS = (
    'import sys\nprint("HELLO-FROM-THE-SUBMISSION")\nprint("AND-ON-STDERR", file=sys.stderr)\n\n'
    "def add(x, y):  # loads, then fails at every call: its worker is alive when the report is made\n"
    '    raise ValueError("not written yet")\n'
)


def test_what_the_submission_printed_is_in_its_report(tmp_path):
    """The prints of a worker that is still running when the report is made (they were collected only when a
    worker stopped, after the report): in `submit --json`, and on the service's report page."""
    path = tmp_path / "add.py"
    path.write_text(PRINTS)
    r = subprocess.run(
        [sys.executable, "-m", "judge", "submit", "93", str(path), "--device", "cpu", "--sandbox", "process", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = json.loads(r.stdout)
    assert report["verdict"] == "RTE" and "HELLO-FROM-THE-SUBMISSION" in report["output"], report["output"]
    assert "AND-ON-STDERR" in report["output"]
    served = Served(tmp_path / "state")
    try:
        job = served.submit(None, 93, PRINTS, "add.py")
        doc = served.wait_done(None, job)
        assert "HELLO-FROM-THE-SUBMISSION" in doc["report"]["output"]
        page = served.call("GET", f"/ui/submissions/{job}")[1].decode()
        assert "What your submission printed" in page and "HELLO-FROM-THE-SUBMISSION" in page
    finally:
        served.stop()
