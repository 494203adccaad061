"""The GPU grading service (``judge serve``); its client (``--forward URL``) is judge.grading.forward_client.

Gradescope and PrairieLearn give graders no GPU, so their container can post
the submission to a host of ours that has one. The protocol, all JSON:

``POST {URL}/grade``, header ``Authorization: Bearer TOKEN`` when the service
has a token, body ``{"problem": "94", "filename": "softmax.py",
"source": BASE64, "seed": INT or null}``. The seed is the per-problem seed
derived from the rubric's secret (never the secret itself); null draws one.

* 200: the judge's JSON report (version 1, as ``judge submit --json``), without its seed;
* 400 ``{"error": ...}``: a malformed request or an unknown problem;
* 401: a missing or wrong token; 413: a body over 2 MiB;
* 500 ``{"error": ...}``: the service failed (the client reports an internal error).

``GET {URL}/health`` answers ``{"ok": true, "device": ..., "slots": N, "problems": [...]}``.

The service judges each request exactly as ``judge grade`` judges a job (a
child process per submission, one per GPU at a time), so a hostile submission
meets the same sandbox there. Scoring under the rubric stays with the client.
"""

from __future__ import annotations

import base64
import hmac
import json
import os
import queue
import shutil
import tempfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from judge.grading.job import run_subprocess

MAX_BODY = 2 << 20


class _Handler(BaseHTTPRequestHandler):
    server_version = "triton-judge"
    service = None  # set by make_server

    def log_message(self, fmt, *args):  # one line per request on stderr, no client-controlled escapes
        self.service.log(f"{self.address_string()} {fmt % args}".encode("ascii", "replace").decode())

    def _send(self, code: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path.rstrip("/") != "/health":
            return self._send(404, {"error": "not found; use POST /grade or GET /health"})
        from judge.problems import all_problems

        s = self.service
        self._send(200, {"ok": True, "device": s.device, "slots": s.slot_count,
                         "problems": [p.id for p in all_problems()]})

    def do_POST(self):
        s = self.service
        if self.path.rstrip("/") != "/grade":
            return self._send(404, {"error": "not found; use POST /grade"})
        if s.token:
            given = self.headers.get("Authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {s.token}".encode()):
                return self._send(401, {"error": "missing or wrong token"})
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            return self._send(400, {"error": "Content-Length is required"})
        if length > MAX_BODY:
            return self._send(413, {"error": f"the request is over {MAX_BODY >> 20} MiB"})
        try:
            request = json.loads(self.rfile.read(length))
            if not isinstance(request, dict):
                raise ValueError("not an object")
            source = base64.b64decode(request["source"], validate=True)
            seed = request.get("seed")
            if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or seed < 0):
                raise ValueError("seed must be a non-negative integer or null")
        except (ValueError, KeyError, TypeError) as exc:
            return self._send(400, {"error": f"malformed request: {exc}"})
        from judge.problems import find_problem

        problem = find_problem(str(request.get("problem", "")))
        if problem is None:
            return self._send(400, {"error": f"unknown problem '{request.get('problem')}'"})
        name = Path(str(request.get("filename") or f"submission{problem.suffix}")).name
        if not name.endswith(problem.suffix) or name.startswith("."):
            name = f"submission{problem.suffix}"
        try:
            report = s.judge(problem.id, name, source, seed)
        except Exception as exc:  # noqa: BLE001 - the client gets one line, the service keeps serving
            return self._send(500, {"error": f"{type(exc).__name__}: {exc}"})
        report.pop("seed", None)
        self._send(200, report)


class Service:
    """What ``judge serve`` runs: a slot per GPU (or N CPU slots), a child judging process per request."""

    def __init__(self, *, device: str, slots: list[int | None], sandbox: str, token: str | None,
                 timeout: float, log=print):
        self.device = device
        self.slots: queue.Queue = queue.Queue()
        for slot in slots:
            self.slots.put(slot)
        self.slot_count = len(slots)
        self.sandbox = sandbox
        self.token = token
        self.timeout = timeout
        self.log = log

    def judge(self, problem_id: int, filename: str, source: bytes, seed: int | None) -> dict:
        tmp = Path(tempfile.mkdtemp(prefix="judge-serve-"))
        try:
            path = tmp / filename
            path.write_bytes(source)
            if seed is None:
                seed = int.from_bytes(os.urandom(4), "big") >> 1
            spec = {"problem": problem_id, "path": str(path), "seed": seed, "device": self.device,
                    "interpret": self.device == "cpu", "sandbox": self.sandbox}
            gpu = self.slots.get()  # waits while every GPU is busy: one submission per GPU
            try:
                report = run_subprocess(spec, timeout=self.timeout, gpu=gpu)
            finally:
                self.slots.put(gpu)
            # Paths in the report (reproduce lines) name this temporary folder: show the bare file name.
            report = json.loads(json.dumps(report).replace(json.dumps(str(tmp) + "/")[1:-1], ""))
            report.setdefault("submission", {})["path"] = filename
            return report
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def make_server(service: Service, host: str, port: int) -> ThreadingHTTPServer:
    handler = type("Handler", (_Handler,), {"service": service})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server
