"""The service's pages in a real browser: headless Chromium from Debian, driven by Selenium.

The browser and its driver are the system's (``apt-get install chromium chromium-driver``; Selenium is
pointed at /usr/bin/chromedriver, so nothing is downloaded at run time). Without them these tests skip,
unless ``JUDGE_REQUIRE_BROWSER=1`` (CI sets it), when they fail instead.

A student logs in with her token, submits the reference of problem 93 (a file upload) and a wrong file
(pasted) through the problem page, follows each judging live, reads the verdicts off the report page, and
finds the accepted one on the leaderboard. ``JUDGE_SCREENSHOTS=DIR`` keeps a screenshot of each report page.
"""

import os
import shutil
import time
from pathlib import Path

import pytest
from service_helpers import ROOT, Served, tokens_file

from judge.problems import find_problem

P93 = find_problem("93")
REFERENCE = ROOT / "reference" / "093-vector-add.py"
WRONG = P93.directory / "submissions" / "wrong_answer" / "tail_dropped.py"
TOKENS = {"alice": "alice-browser-token-0123456789", "ta": "ta-browser-token-0123456789ab"}
CHROMEDRIVER = "/usr/bin/chromedriver"


def _browser_or_skip():
    missing = []
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("selenium (pip install -e '.[dev]')")
    if not Path(CHROMEDRIVER).exists():
        missing.append(f"{CHROMEDRIVER} (apt-get install chromium-driver)")
    if not (shutil.which("chromium") or Path("/usr/bin/chromium").exists()):
        missing.append("chromium (apt-get install chromium)")
    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        missing.append("the [serve] extra")
    if missing:
        why = "the browser tests need " + ", ".join(missing)
        if os.environ.get("JUDGE_REQUIRE_BROWSER") == "1":
            pytest.fail(why)
        pytest.skip(why)


@pytest.fixture()
def browser():
    _browser_or_skip()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1280,1500",
        "--no-first-run",
        "--disable-extensions",
    ):
        options.add_argument(arg)
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # console errors: a blocked script shows
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(120)
    yield driver
    driver.quit()


def _wait(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.25)


def _verdict_after_live_status(driver, timeout=600):
    """Follow the submission page until the report replaces the live status; the statuses seen on the way."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.common.by import By

    seen = set()

    def verdict():
        try:
            return driver.find_element(By.ID, "verdict").text
        except (NoSuchElementException, StaleElementReferenceException):
            pass
        try:
            status = driver.find_element(By.ID, "status").text
            progress = driver.find_element(By.ID, "progress").text
            seen.add(f"{status}: {progress}")
        except (NoSuchElementException, StaleElementReferenceException):
            pass
        return None

    return _wait(verdict, timeout, "the verdict on the page"), seen


@pytest.mark.corpus
def test_submit_through_the_page_and_read_the_verdicts(browser, tmp_path):
    from selenium.webdriver.common.by import By

    tokens = tokens_file(tmp_path / "tokens.csv", TOKENS, staff=("ta",))
    # A relative --state, as the README starts it: the jobs' progress still reaches the page.
    served = Served("state", "--tokens", tokens, "--jobs", "1", cwd=tmp_path)
    shots = os.environ.get("JUDGE_SCREENSHOTS")
    try:
        d = browser
        d.get(served.url + "/ui/problems/93")  # not logged in: the login page, then back here
        assert "/ui/login" in d.current_url
        d.find_element(By.ID, "token").send_keys(TOKENS["alice"])
        d.find_element(By.ID, "login").click()
        # The URL changes when the redirect arrives, before the page is built: wait for its parts, not the URL.
        _wait(lambda: "/ui/problems/93" in d.current_url and d.find_elements(By.ID, "who"), 60, "the problem page")
        assert d.find_element(By.ID, "who").text == "alice"
        assert "Vector addition" in d.find_element(By.TAG_NAME, "h1").text
        assert d.find_elements(By.CSS_SELECTOR, "article.statement h1, article.statement h2")  # markdown rendered

        # The reference, uploaded as a file.
        d.find_element(By.ID, "file").send_keys(str(REFERENCE))
        assert d.find_element(By.ID, "filename").get_attribute("value") == REFERENCE.name  # app.js named it
        d.find_element(By.ID, "submit").click()
        _wait(lambda: "/ui/submissions/" in d.current_url, 60, "the submission page")
        verdict, seen = _verdict_after_live_status(d)
        assert verdict == "AC", d.find_element(By.TAG_NAME, "main").text
        assert any(s.startswith("running: testing") for s in seen), seen  # the live status named the group
        assert "passed" in d.find_element(By.ID, "groups").text
        if shots:
            d.save_screenshot(str(Path(shots) / "report-ac.png"))

        # A wrong file, pasted.
        d.get(served.url + "/ui/problems/93")
        d.find_element(By.ID, "text").send_keys(WRONG.read_text())
        d.find_element(By.ID, "filename").clear()
        d.find_element(By.ID, "filename").send_keys("add.py")
        d.find_element(By.ID, "submit").click()
        _wait(lambda: "/ui/submissions/" in d.current_url, 60, "the submission page")
        verdict, _ = _verdict_after_live_status(d)
        assert verdict == "WA", d.find_element(By.TAG_NAME, "main").text
        failure = d.find_element(By.CSS_SELECTOR, "section.failure")
        assert "NaN where finite values were expected" in failure.text
        assert d.find_element(By.CSS_SELECTOR, "section.failure pre.reproduce").text.startswith(
            "python -m judge test 93 add.py --group"
        )
        assert d.find_element(By.CSS_SELECTOR, "section.failure pre.case").text.startswith("{")
        if shots:
            d.set_window_size(1100, 1250)
            d.save_screenshot(str(Path(shots) / "report-wa.png"))

        # The leaderboard lists the accepted submission, and only that one.
        d.get(served.url + "/ui/leaderboard/93")
        rows = d.find_elements(By.CSS_SELECTOR, "#leaderboard tbody tr")
        assert [r.find_element(By.CSS_SELECTOR, "td.student").text for r in rows] == ["anonymous (you)"]
        # Her list shows both, with their verdicts.
        d.get(served.url + "/ui/submissions")
        assert sorted(e.text for e in d.find_elements(By.CSS_SELECTOR, "table.jobs .verdict")) == ["AC", "WA"]
        # No console errors (a blocked script or style would show here).
        errors = [e for e in d.get_log("browser") if e.get("level") == "SEVERE"] if hasattr(d, "get_log") else []
        assert not errors, errors
    finally:
        served.stop()


@pytest.mark.corpus
def test_staff_page_and_another_students_report(browser, tmp_path):
    """Staff see the roster's table and its CSV link; a student who opens someone else's report gets 404."""
    from selenium.webdriver.common.by import By

    people = dict(TOKENS, bob="bob-browser-token-0123456789a")
    tokens = tokens_file(tmp_path / "tokens.csv", people, staff=("ta",))
    served = Served(tmp_path / "state", "--tokens", tokens)
    try:
        p101 = find_problem("101")
        job = served.submit(
            people["alice"], 101, (p101.directory / "submissions" / "accepted" / "exact.toml").read_text(), "101.toml"
        )
        served.wait_done(people["alice"], job)
        d = browser
        d.get(served.url + "/ui/login")
        d.find_element(By.ID, "token").send_keys(people["bob"])
        d.find_element(By.ID, "login").click()
        _wait(lambda: d.find_elements(By.ID, "who"), 60, "bob logged in")
        d.get(served.url + f"/ui/submissions/{job}")
        assert d.find_element(By.TAG_NAME, "h1").text == "404"
        d.get(served.url + "/ui/staff")
        assert d.find_element(By.TAG_NAME, "h1").text == "403"
        d.find_element(By.CSS_SELECTOR, "form[action='/ui/logout'] button").click()
        _wait(lambda: not d.find_elements(By.ID, "who"), 60, "bob logged out")  # the form's post has landed
        d.get(served.url + "/ui/login")
        d.find_element(By.ID, "token").send_keys(people["ta"])
        d.find_element(By.ID, "login").click()
        _wait(lambda: d.find_elements(By.ID, "who"), 60, "ta logged in")
        d.get(served.url + "/ui/staff")
        table = d.find_element(By.ID, "results").text
        assert "alice" in table and "bob" in table and "AC" in table
        assert d.find_element(By.ID, "csv").get_attribute("href").endswith("/staff/results.csv")
    finally:
        served.stop()


def _login(d, url, token):
    from selenium.webdriver.common.by import By

    d.get(url + "/ui/login")
    d.find_element(By.ID, "token").send_keys(token)
    d.find_element(By.ID, "login").click()
    _wait(lambda: d.find_elements(By.ID, "who"), 60, "logged in")


def _logout(d):
    from selenium.webdriver.common.by import By

    d.find_element(By.CSS_SELECTOR, "form[action='/ui/logout'] button").click()
    _wait(lambda: not d.find_elements(By.ID, "who"), 60, "logged out")


def _severe(d):
    return [e for e in d.get_log("browser") if e.get("level") == "SEVERE"] if hasattr(d, "get_log") else []


def test_the_api_docs_render_in_the_browser(browser, tmp_path):
    """/docs: Swagger UI 5 from the service's own files reads the OpenAPI 3.1 schema and lists the calls."""
    from selenium.webdriver.common.by import By

    served = Served(tmp_path / "state")
    try:
        d = browser
        d.get(served.url + "/docs")
        ops = _wait(lambda: d.find_elements(By.CSS_SELECTOR, ".opblock-summary-path"), 60, "the operations")
        paths = {o.get_attribute("data-path") or o.text for o in ops}
        assert {"/submissions", "/submissions/{job_id}", "/leaderboard/{key}", "/staff/regrade", "/me"} <= paths
        assert "Unable to render" not in d.find_element(By.TAG_NAME, "body").text
        assert not _severe(d)  # nothing blocked by the Content-Security-Policy, nothing from another site
    finally:
        served.stop()


def _no_horizontal_scroll(d):
    return d.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")


def test_the_pages_fit_a_phone(browser, tmp_path):
    """At a phone's width (375 CSS pixels) no page scrolls sideways; wide tables scroll inside their box."""
    from judge.problems import find_problem as find

    people = dict(TOKENS)
    tokens = tokens_file(tmp_path / "tokens.csv", people, staff=("ta",))
    served = Served(tmp_path / "state", "--tokens", tokens)
    shots = Path(os.environ.get("JUDGE_SCREENSHOTS") or tmp_path)
    try:
        p101 = find("101")
        wrong = (p101.directory / "submissions" / "wrong_answer" / "forgot_partial_program.toml").read_text()
        job = served.submit(people["alice"], 101, wrong, "a_long_file_name_with_underscores_101.toml")
        served.wait_done(people["alice"], job)
        d = browser
        d.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride", {"width": 375, "height": 812, "deviceScaleFactor": 2, "mobile": True}
        )
        _login(d, served.url, people["ta"])
        for name, path in (
            ("index", "/"),
            ("problem", "/ui/problems/94"),
            ("report", f"/ui/submissions/{job}"),
            ("submissions", "/ui/submissions"),
            ("leaderboard", "/ui/leaderboard/101"),
            ("staff", "/ui/staff"),
            ("me", "/ui/me"),
        ):
            d.get(served.url + path)
            width, inner = _no_horizontal_scroll(d)
            d.save_screenshot(str(shots / f"phone-{name}.png"))
            assert inner == 375 and width <= inner, (name, width, inner)
    finally:
        served.stop()


@pytest.mark.corpus
def test_two_students_one_failing_a_hidden_group_see_the_same_pages(browser, tmp_path):
    """Before the deadline a student who fails only a hidden group and one who passes everything read the same
    report page, live status, list and leaderboard (their names, ids and times aside); after it, not."""
    import re

    from selenium.webdriver.common.by import By

    from judge.problems import find_problem as find

    p101 = find("101")
    exact = (p101.directory / "submissions" / "accepted" / "exact.toml").read_text()
    people = {"ann01": "ann01-browser-token-0123456", "ben02": "ben02-browser-token-0123456"}
    tokens = tokens_file(tmp_path / "tokens.csv", people)

    def rubric(deadline):
        path = tmp_path / f"rubric-{deadline[:4]}.toml"
        path.write_text(
            f'deadline = {deadline}\nsecret_seed = "browser-secret-0123"\n[problems.101]\n'
            'visible_before_deadline = ["programs", "masked_lanes"]\nvisible_after_deadline = "all"\n'
        )
        return path

    def mask(text, job, name):
        text = text.replace(job, "<ID>").replace(name, "<NAME>")
        text = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", "<TIME>", text)
        text = re.sub(r"judged in [\d.]+ s", "judged in <T> s", text)
        return text.replace(" (you)", "")

    def pages(served, token, name, job):
        d = browser
        _login(d, served.url, token)
        out = {}
        for what, path in (
            ("report", f"/ui/submissions/{job}"),
            ("list", "/ui/submissions"),
            ("board", "/ui/leaderboard/101"),
        ):
            d.get(served.url + path)
            out[what] = mask(d.find_element(By.TAG_NAME, "main").text, job, name)
        out["verdict"] = d.get(served.url + f"/ui/submissions/{job}") or d.find_element(By.ID, "verdict").text
        _logout(d)
        return out

    before = Served(tmp_path / "state", "--tokens", tokens, "--rubric", rubric("2999-01-01T00:00:00Z"))
    try:
        a = before.submit(people["ann01"], 101, exact, "101.toml")
        before.wait_done(people["ann01"], a)
        b = before.submit(people["ben02"], 101, exact.replace("programs_big = 1025", "programs_big = 1777"), "101.toml")
        before.wait_done(people["ben02"], b)
        seen_a, seen_b = pages(before, people["ann01"], "ann01", a), pages(before, people["ben02"], "ben02", b)
        assert seen_a == seen_b and seen_a["verdict"] == "AC"
        assert len(re.findall(r"^\d+ anonymous", seen_a["board"], re.M)) == 2  # both ranked, by what is shown
    finally:
        before.stop()
    after = Served(tmp_path / "state", "--tokens", tokens, "--rubric", rubric("2000-01-01T00:00:00Z"))
    try:
        seen_a, seen_b = pages(after, people["ann01"], "ann01", a), pages(after, people["ben02"], "ben02", b)
        assert seen_a["report"] != seen_b["report"] and (seen_a["verdict"], seen_b["verdict"]) == ("AC", "WA")
        assert len(re.findall(r"^\d+ anonymous", seen_b["board"], re.M)) == 1  # by everything now
    finally:
        after.stop()
