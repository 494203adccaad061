"""A real ``judge serve`` (uvicorn) on a free local port, and a tiny HTTP client for the service's tests."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class Served:
    """``python -m judge serve --port 0 --device cpu --sandbox process --state STATE ARGS...`` in a child.

    Its stderr is read in a thread (kept in ``lines``), so the service never blocks on a full pipe.
    """

    def __init__(
        self, state: Path, *args, env: dict | None = None, device: str | None = "cpu", cwd: Path | None = None
    ):
        """CWD: the folder it runs in (a relative STATE is relative to it); DEVICE None: no --device."""
        cwd = Path(cwd or ROOT)
        self.state = cwd / state
        argv = [
            sys.executable,
            "-m",
            "judge",
            "serve",
            "--port",
            "0",
            *(["--device", device] if device else []),
            "--sandbox",
            "process",
            "--state",
            str(state),
            *map(str, args),
        ]
        path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        self.proc = subprocess.Popen(
            argv,
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": path, **(env or {})},
            start_new_session=True,
        )
        first = self.proc.stderr.readline()
        match = re.search(r"http://[\d.]+:\d+", first)
        if not match:
            rest = self.proc.stderr.read() if self.proc.poll() is not None else ""
            self.proc.kill()
            raise AssertionError(f"the service did not start: {first}{rest}")
        self.url = match.group(0)
        self.lines: list[str] = [first]
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.wait_healthy()

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append(line)

    def log(self) -> str:
        return "".join(self.lines)

    def wait_healthy(self, timeout: float = 120) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            try:
                code, doc, _ = self.call("GET", "/health")
                if code == 200 and doc.get("ok"):
                    return doc
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the service is not healthy:\n{self.log()[-3000:]}")
            time.sleep(0.2)

    def call(
        self,
        method: str,
        path: str,
        body=None,
        token: str | None = None,
        raw: bytes | None = None,
        headers: dict | None = None,
        timeout: float = 60,
    ):
        """(status, JSON or bytes, headers) of one request; never raises for an HTTP error."""
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        request = urllib.request.Request(
            self.url + path, data=data, method=method, headers={"Content-Type": "application/json", **(headers or {})}
        )
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                code, payload, head = response.status, response.read(), dict(response.headers)
        except urllib.error.HTTPError as exc:
            code, payload, head = exc.code, exc.read(), dict(exc.headers)
        if "json" in head.get("content-type", ""):
            payload = json.loads(payload)
        return code, payload, head

    def submit(self, token, problem, text: str, filename: str | None = None, **extra) -> str:
        code, doc, _ = self.call(
            "POST", "/submissions", {"problem": problem, "text": text, "filename": filename, **extra}, token
        )
        assert code == 202, (code, doc)
        return doc["id"]

    def wait_done(self, token, job_id: str, timeout: float = 600) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            code, doc, _ = self.call("GET", f"/submissions/{job_id}", token=token)
            assert code == 200, (code, doc)
            if doc["status"] == "done":
                return doc
            assert time.monotonic() < deadline, f"job {job_id} not done in {timeout} s: {doc}"
            time.sleep(0.3)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """SIGKILL by default, as a crash or an OOM kill would: no shutdown code runs. SIGTERM: a stop."""
        os.kill(self.proc.pid, sig)
        self.proc.wait(timeout=90)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)


def tokens_file(path: Path, people: dict[str, str], staff: tuple[str, ...] = ()) -> Path:
    rows = ["name,token,role"] + [f"{n},{t},{'staff' if n in staff else 'student'}" for n, t in people.items()]
    path.write_text("\n".join(rows) + "\n")
    return path
