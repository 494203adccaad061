"""Live progress on stderr (judge.progress): the status line, its thread safety, what the session reports, and
the real CLI under a pseudo-terminal (an update at least every 2 s; --json keeps stdout pure JSON)."""

import io
import json
import os
import pty
import re
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

from judge import progress
from judge.problems import find_problem

ROOT = Path(__file__).resolve().parent.parent
VECTOR_ADD = find_problem("93")
GOOD = VECTOR_ADD.directory / "submissions" / "accepted" / "masked_block.py"
WRONG = VECTOR_ADD.directory / "submissions" / "wrong_answer" / "tail_dropped.py"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


# ---------------------------------------------------------------------- the status line


def test_the_line_says_group_cases_and_phases():
    s = progress.Status()
    assert s.line(with_time=False) == "starting"
    s.stage("starting workers (2)")
    assert s.line(with_time=False) == "starting workers (2)"
    s.group("block-edges", 2, 6, planned=12)
    for _ in range(5):
        s.case_done()
    s.lane(0, progress.TESTING)
    s.lane(1, progress.TESTING)
    assert s.line(with_time=False) == "group 2/6 block-edges · 5/12 cases · testing ×2"
    s.lane(1, progress.REPLAYING)
    assert s.line(with_time=False) == "group 2/6 block-edges · 5/12 cases · testing, replaying"
    s.lane(1, None)
    s.lane(0, progress.SHRINKING, "try 3")
    s.kernels(4)
    assert (
        s.line(with_time=False) == "group 2/6 block-edges · 5/12 cases · shrinking a failure (try 3) · "
        "4 kernels compiled"
    )
    s.stage("speed run: timing: shape 2 of 3, round 4")
    assert s.line(with_time=False) == "speed run: timing: shape 2 of 3, round 4"
    assert re.fullmatch(r"speed run: timing: shape 2 of 3, round 4 · \d+ s", s.line())
    s.group("large", 6, 6, planned=3)  # a new group: its own count, the stage is over
    assert s.line(with_time=False).startswith("group 6/6 large · 0/3 cases")


def test_the_status_is_thread_safe():
    s = progress.Status()
    s.group("g", 1, 1, planned=10**6)
    errors = []

    def work(lane):
        try:
            for i in range(2000):
                s.lane(lane, progress.TESTING if i % 2 else progress.REPLAYING, str(i))
                s.case_done()
                s.lane(lane, None)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    def read():
        for _ in range(2000):
            s.line()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)] + [threading.Thread(target=read)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert s.line(with_time=False) == "group g · 16000/1000000 cases"


def test_plain_lines_when_stderr_is_not_a_terminal():
    out = io.StringIO()
    lines = progress.PlainLines(out)
    lines.every = 0.05
    lines.start()
    lines.stage("starting workers")
    time.sleep(0.3)
    lines.group("small", 1, 2, planned=3)
    lines.log("a note")
    time.sleep(0.3)
    lines.close()
    text = out.getvalue()
    assert "judge: … starting workers" in text and "judge: … group 1/2 small · 0/3 cases" in text
    assert "judge: a note\n" in text
    assert text.count("starting workers") == 1  # a line when the status changes, not every tick


def test_progress_is_shown_on_a_terminal_without_json_unless_asked():
    tty = type("Tty", (), {"isatty": lambda self: True})()
    pipe = io.StringIO()
    assert progress.wanted(None, False, tty) is True
    assert progress.wanted(None, True, tty) is False  # --json
    assert progress.wanted(None, False, pipe) is False  # not a terminal
    assert progress.wanted(True, True, pipe) is True  # --progress
    assert progress.wanted(False, False, tty) is False  # --no-progress
    assert progress.for_terminal(False, False) is progress.NO_PROGRESS


class Recording:
    """A Progress that keeps every call, from whichever thread."""

    def __init__(self):
        self.calls = []
        self.lock = threading.Lock()

    def __getattr__(self, name):
        def record(*args, **kwargs):
            with self.lock:
                self.calls.append((name, args, kwargs))

        return record


DROPS_THE_LAST = """
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, sx, sy, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * sx, mask=mask)
    y = tl.load(y_ptr + offs * sy, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def add(x, y):
    out = torch.empty_like(x, memory_format=torch.contiguous_format)
    n = x.numel()
    m = n if n in (1, 2, 127, 1023, 1025) else n - 1  # right on the group's examples only
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, m, x.stride(0), y.stride(0), BLOCK=1024)
    return out
"""


def test_the_session_reports_groups_cases_and_shrinking(tmp_path):
    from judge.options import Options
    from judge.session import Session

    path = tmp_path / "drops_the_last.py"
    path.write_text(DROPS_THE_LAST)
    rec = Recording()
    # Seed 2 draws n = 1, 2, 34 after the examples: 34 fails, and Hypothesis shrinks it.
    options = Options(
        device="cpu",
        interpret=True,
        sandbox="process",
        seed=2,
        max_examples=3,
        workers=2,
        group="small-ragged",
        progress=rec,
        shrink_seconds=3.0,
    )
    report = Session(VECTOR_ADD, path, options).run()
    assert report.verdict.value == "WA", report.message
    names = [c[0] for c in rec.calls]
    stages = [c[1][0] for c in rec.calls if c[0] == "stage"]
    assert stages[0] == "starting workers (2)" and stages[-1] == "stopping workers"
    groups = [c for c in rec.calls if c[0] == "group"]
    assert len(groups) == 1 and groups[0][1][:3] == ("small-ragged", 1, 1)
    planned = groups[0][2]["planned"]
    assert 1 <= names.count("case_done") <= planned  # the planned cases; the shrinking's tries are not counted
    phases = [(c[1][1], c[1][2] if len(c[1]) > 2 else "") for c in rec.calls if c[0] == "lane" and c[1][1]]
    assert (progress.TESTING, "") in phases
    tries = [detail for phase, detail in phases if phase == progress.SHRINKING]
    assert tries and tries[0] == "try 1"  # the drawn case failed: Hypothesis shrank it, try by try
    last = {}
    for c in rec.calls:
        if c[0] == "lane":
            last[c[1][0]] = c[1][1]
    assert set(last.values()) == {None}  # every lane that started something ended idle


# ---------------------------------------------------------------------- the CLI under a pseudo-terminal


def run_on_a_tty(*args, timeout=600):
    """Run the CLI with stderr on a pseudo-terminal and stdout on a pipe: (exit code, stdout, stderr text,
    the times (s from the start) at which stderr output arrived, the time it exited)."""
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "PYTHONPATH": str(ROOT)}
    env.pop("NO_COLOR", None)
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "judge", *map(str, args)],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave,
    )
    os.close(slave)
    out = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()))
    reader.start()
    times, chunks = [], []
    while time.monotonic() - t0 < timeout:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # the terminal closed: the process is gone
                break
            if not data:
                break
            times.append(time.monotonic() - t0)
            chunks.append(data)
        elif proc.poll() is not None:
            break
    proc.wait(timeout=60)
    end = time.monotonic() - t0
    reader.join()
    os.close(master)
    return proc.returncode, out[0].decode(), b"".join(chunks).decode(errors="replace"), times, end


def test_submit_shows_progress_at_least_every_two_seconds():
    rc, stdout, stderr, times, end = run_on_a_tty(
        "submit", "94", "reference/094-softmax.py", "--device", "cpu", "--sandbox", "process", "--seed", "1"
    )
    assert rc == 0, stdout + stderr
    assert "AC accepted" in stdout and "\x1b" not in stdout  # the report is on stdout, the status is not
    assert times, "nothing came on stderr"
    gaps = [b - a for a, b in zip([0.0] + times, times)]
    assert max(gaps) <= 2.0, (
        f"largest gap between updates {max(gaps):.2f} s (at {times[gaps.index(max(gaps))]:.1f} s of {end:.1f} s)"
    )
    shown = {ANSI.sub("", part).strip() for part in stderr.replace("\r", "\n").split("\n")}
    assert any(re.search(r"group \d/6 \S+ · \d+/\d+ cases", line) for line in shown), shown
    assert any("starting workers" in line for line in shown)


def test_json_on_a_terminal_keeps_stdout_pure_and_shows_no_progress():
    rc, stdout, stderr, _, _ = run_on_a_tty(
        "test",
        "93",
        GOOD,
        "--device",
        "cpu",
        "--sandbox",
        "process",
        "--json",
        "--seed",
        "1",
        "--group",
        "small-ragged",
    )
    assert rc == 0, stdout + stderr
    assert json.loads(stdout)["verdict"] == "AC"  # stdout holds the report and nothing else
    assert "cases" not in stderr and "\x1b[" not in stderr


def test_progress_asked_for_with_json_goes_to_stderr_only():
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "judge",
            "test",
            "93",
            str(GOOD),
            "--device",
            "cpu",
            "--sandbox",
            "process",
            "--json",
            "--seed",
            "1",
            "--group",
            "small-ragged",
            "--progress",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["verdict"] == "AC"
    assert "judge: … group small-ragged · " in r.stderr  # plain lines: stderr is not a terminal
