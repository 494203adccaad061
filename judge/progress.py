"""Live progress of a judging run: what it is doing now, on stderr, while the student waits.

The session (judge.session) and the speed run (judge.timing.speedrun) report
what they do through the small :class:`Progress` interface below, from
whichever thread does it (the workers' cases run in threads); they never
print. The default, :data:`NO_PROGRESS`, does nothing: course grading, the
self-test and ``--json`` runs stay silent. The command line (judge.cli)
shows it with :func:`for_terminal`: one transient status line through rich
when stderr is a terminal, redrawn by a ticker thread at least every half
second (so it moves while the judge waits on a worker), or plain lines when
asked for (``--progress``) on a stderr that is not a terminal.

A status line reads, e.g.::

    ⠼ group 2/6 block-edges · 5/12 cases · testing ×2 · 14 s
    ⠼ group 4/6 extreme-values · 8/8 cases · shrinking a failure (try 3) · 31 s
    ⠼ speed run · timing: shape 2 of 3, round 4 · 52 s
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
import time
from typing import Protocol

# The phases a worker (a "lane") can be in; the session and the speed run use these words.
STARTING = "starting workers"
COMPILING = "compiling"
TESTING = "testing"
SHRINKING = "shrinking a failure"
REPLAYING = "replaying"

TICK_SECONDS = 0.25  # the terminal line is redrawn this often, even when nothing changed
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


class Progress(Protocol):
    """What a judging run reports as it goes. Every method may be called from any thread."""

    def stage(self, text: str | None) -> None:
        """What the run as a whole is doing now ("starting workers", "speed run: timing: shape 1 of 3, round 2");
        None when that is over and the test groups speak for themselves."""

    def group(self, name: str, index: int, total: int, planned: int) -> None:
        """Test group ``name`` (``index`` of ``total``, from 1) begins, with ``planned`` cases to run."""

    def case_done(self) -> None:
        """One more of the group's planned cases has its outcome."""

    def lane(self, lane: int, phase: str | None, detail: str = "") -> None:
        """Worker ``lane`` (0: the first) is now in ``phase`` (one of the words above), or idle (None)."""

    def kernels(self, compiled: int) -> None:
        """Kernels compiled so far by the submission's workers (GPU only)."""

    def log(self, message: str) -> None:
        """A line to keep on stderr (printed above the status line, never inside it)."""

    def blocking(self, text: str):
        """A context for a stretch that may hold the interpreter's lock for seconds (importing torch: its C++
        initialisation runs under the GIL, so no thread of this process can draw meanwhile); ``text`` is the
        stage shown during it."""

    def close(self) -> None:
        """Stop showing progress (the status line is cleared)."""


class NoProgress:
    """The default: says nothing."""

    def stage(self, text):
        pass

    def group(self, name, index, total, planned):
        pass

    def case_done(self):
        pass

    def lane(self, lane, phase, detail=""):
        pass

    def kernels(self, compiled):
        pass

    def log(self, message):
        pass

    def blocking(self, text):
        return contextlib.nullcontext()

    def close(self):
        pass


NO_PROGRESS = NoProgress()


class Events(NoProgress):
    """Progress as events for a program (the grading service's live status, judge.grading.job): ``emit`` gets
    ``{"group", "index", "groups"}`` when a test group begins and ``{"phase": "timing"}`` when the speed run
    does. One Progress for the terminal and the service: the session reports once."""

    def __init__(self, emit):
        self.emit = emit

    def _send(self, event: dict) -> None:
        try:
            self.emit(event)
        except Exception:  # noqa: BLE001 - progress never fails a judging
            pass

    def group(self, name, index, total, planned):
        self._send({"group": name, "index": index, "groups": total})

    def stage(self, text):
        if text and text.startswith("speed run"):
            self._send({"phase": "timing"})


class Status:
    """The progress of one run as state (thread-safe), and that state as one line of text."""

    def __init__(self, clock=time.monotonic):
        self._lock = threading.Lock()
        self._clock = clock
        self.started = clock()
        self._stage: str | None = None
        self._group: tuple | None = None  # (name, index, total, planned)
        self._done = 0
        self._lanes: dict[int, tuple[str, str]] = {}
        self._compiled = 0

    def stage(self, text):
        with self._lock:
            self._stage = text

    def group(self, name, index, total, planned):
        with self._lock:
            self._group = (name, index, total, planned)
            self._done = 0
            self._stage = None

    def case_done(self):
        with self._lock:
            self._done += 1

    def lane(self, lane, phase, detail=""):
        with self._lock:
            if phase is None:
                self._lanes.pop(lane, None)
            else:
                self._lanes[lane] = (phase, detail)

    def kernels(self, compiled):
        with self._lock:
            self._compiled = compiled

    @contextlib.contextmanager
    def blocking(self, text):
        self.stage(text)
        yield

    def line(self, with_time: bool = True) -> str:
        """The status as one line of plain text."""
        with self._lock:
            parts = []
            if self._stage:
                parts.append(self._stage)
            elif self._group is not None:
                name, index, total, planned = self._group
                parts.append(f"group {index}/{total} {name}" if total > 1 else f"group {name}")
                parts.append(f"{min(self._done, planned)}/{planned} cases")
                phases: dict[str, int] = {}
                for phase, detail in self._lanes.values():
                    text = f"{phase} ({detail})" if detail else phase
                    phases[text] = phases.get(text, 0) + 1
                if phases:
                    parts.append(", ".join(p if n == 1 else f"{p} ×{n}" for p, n in phases.items()))
                if self._compiled:
                    parts.append(f"{self._compiled} kernel{'s' if self._compiled != 1 else ''} compiled")
            else:
                parts.append("starting")
            if with_time:
                parts.append(f"{self._clock() - self.started:.0f} s")
        return " · ".join(parts)


class _Ticker(Status):
    """A Status redrawn by a thread of its own every ``every`` seconds, until close()."""

    every = TICK_SECONDS

    def __init__(self):
        super().__init__()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._run, name="judge-progress", daemon=True)

    def start(self):
        self._thread.start()
        return self

    def _run(self):
        while not self._closed.wait(self.every):
            try:
                self.draw()
            except Exception:  # noqa: BLE001 - progress must never break a judging run
                pass

    def draw(self):
        raise NotImplementedError

    def close(self):
        if self._closed.is_set():
            return
        self._closed.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=2)
        self.finish()

    def finish(self):
        pass


class LiveLine(_Ticker):
    """One transient status line on a terminal (rich), with a spinner; cleared by close()."""

    def __init__(self, console):
        super().__init__()
        from rich.live import Live

        self._console = console
        self._frame = 0
        self._helper: subprocess.Popen | None = None
        self._draw_lock = threading.Lock()
        self._live = Live(
            console=console,
            get_renderable=self._render,
            auto_refresh=False,
            transient=True,
            redirect_stdout=False,
            redirect_stderr=True,
        )

    def _render(self):
        from rich.text import Text

        frame = SPINNER[self._frame % len(SPINNER)]
        return Text(f"{frame} {self.line()}", style="dim", no_wrap=True, overflow="ellipsis")

    def start(self):
        self._live.start(refresh=True)
        return super().start()

    def stage(self, text):
        super().stage(text)
        # Drawn at once, as PlainLines does: a stage shorter than a tick (workers handed over by the head
        # start at once) would otherwise never be on the line (test_progress holds it to that).
        self.draw()

    def draw(self):
        with self._draw_lock:
            if self._closed.is_set():
                return  # the line was cleared for good (a usage error found inside a blocking stretch)
            if self._helper is not None:
                return  # the helper process draws the line meanwhile
            self._frame += 1
            self._live.refresh()

    @contextlib.contextmanager
    def blocking(self, text):
        """While the block runs, a small helper process (no imports, started in milliseconds) redraws the same
        line with its own clock: this process's threads may not run at all (the GIL held by torch's import)."""
        self.stage(text)
        line = f"{text} · " if len(text) < max(10, self._console.width - 20) else ""
        with self._draw_lock:
            self._frame += 1
            self._live.refresh()
            try:
                self._helper = subprocess.Popen(
                    [
                        sys.executable,
                        "-I",
                        "-S",
                        "-c",
                        _HELPER,
                        line,
                        repr(self.started),
                        repr(self.every),
                        str(self._frame),
                    ],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                )
            except Exception:  # noqa: BLE001 - without the helper the ticker carries on as it can
                self._helper = None
        try:
            yield
        finally:
            self._stop_helper()
            self.draw()

    def _stop_helper(self):
        with self._draw_lock:
            helper, self._helper = self._helper, None
        if helper is not None:
            helper.stdin.close()  # its cue to stop
            try:
                helper.wait(timeout=1)
            except subprocess.TimeoutExpired:
                helper.kill()
                helper.wait()

    def log(self, message):
        from rich.markup import escape

        self._console.print(f"judge: {escape(message)}", highlight=False, soft_wrap=True)

    def finish(self):
        self._stop_helper()
        self._live.stop()


class PlainLines(_Ticker):
    """Plain lines on a stderr that is not a terminal (``--progress`` asked for): a line when the status
    changes (at most one a second), and one every 10 s while it does not."""

    every = 1.0
    quiet = 10.0

    def __init__(self, stream=None):
        super().__init__()
        self._stream = stream or sys.stderr
        self._last = ("", 0.0)
        self._write_lock = threading.Lock()

    def start(self):
        self.draw()
        return super().start()

    def stage(self, text):
        super().stage(text)
        self.draw()  # a new stage or group is written at once: a short one may not last until the next tick

    def group(self, name, index, total, planned):
        super().group(name, index, total, planned)
        self.draw()

    def draw(self):
        with self._write_lock:
            now = time.monotonic()
            text = self.line(with_time=False)
            if text == self._last[0] and now - self._last[1] < self.quiet:
                return
            self._last = (text, now)
            self._stream.write(f"judge: … {self.line()}\n")
            self._stream.flush()

    def log(self, message):
        self._write(f"judge: {message}")

    def _write(self, text):
        with self._write_lock:
            self._stream.write(text + "\n")
            self._stream.flush()


# The helper of LiveLine.blocking: the status line, redrawn every TICK_SECONDS on stderr until its stdin closes.
# It imports nothing beyond built-in modules, and its clock is the parent's (CLOCK_MONOTONIC is system-wide).
_HELPER = (
    """
import os, select, sys, time
text, started, every, frame = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
spin = "%s"
while True:
    frame += 1
    line = "\\r\\x1b[2K\\x1b[2m%%s %%s%%.0f s\\x1b[0m" %% (spin[frame %% len(spin)], text, time.monotonic() - started)
    os.write(2, line.encode())
    if select.select([0], [], [], every)[0]:
        break
"""  # noqa: UP031
    % SPINNER
)


def wanted(asked: bool | None, as_json: bool, stream=None) -> bool:
    """Show progress? As asked (--progress/--no-progress); by default only on a terminal and without --json."""
    if asked is not None:
        return asked
    stream = stream or sys.stderr
    return not as_json and bool(getattr(stream, "isatty", lambda: False)())


def for_terminal(asked: bool | None, as_json: bool) -> Progress:
    """The progress a command shows on stderr: a live line on a terminal, plain lines elsewhere when asked for,
    NO_PROGRESS when not wanted. Started: close() it when the run ends."""
    if not wanted(asked, as_json):
        return NO_PROGRESS
    from rich.console import Console

    console = Console(stderr=True, highlight=False)
    if console.is_terminal and not console.is_dumb_terminal:
        return LiveLine(console).start()
    return PlainLines().start()
