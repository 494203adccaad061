"""The client of the grading service (``--forward URL``): submit, then poll until the report is there.

Gradescope and PrairieLearn give graders no GPU, so their container posts the
submission to ``judge serve`` on a GPU host (judge.service; its API is at
``URL/docs``) and waits for the judge's report:

1. ``POST {URL}/submissions`` with ``Authorization: Bearer TOKEN`` and
   ``{"problem", "filename", "source" (base64), "seed"}``; the seed is the
   per-problem seed derived from the rubric's secret (never the secret
   itself), or null for the service's own. The answer, 202, names the job.
2. ``GET {URL}/submissions/{id}`` every few seconds until its ``status`` is
   ``done``; its ``report`` is the judge's JSON report (version 1), without
   its seed. A service that restarts meanwhile keeps the job (and judges it
   again if it was running): the client keeps polling through refused
   connections and 5xx answers until its timeout.

Scoring under the rubric stays with the client. Only the standard library is
used: a forwarding bundle installs neither torch nor any HTTP package.
"""

from __future__ import annotations

import base64
import json
import time
import urllib.error
import urllib.request
from pathlib import Path


class ForwardError(Exception):
    """The grading service could not judge the submission (unreachable, refused, failed)."""


class _Transient(Exception):
    """A failure worth asking again about (the service restarting, a proxy's 502)."""


def _call(url: str, token: str | None, body: dict | None = None, timeout: float = 60) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        url,
        data=data,
        method="POST" if data is not None else "GET",
        headers={"Content-Type": "application/json", "Accept": "application/json"},
    )
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        try:
            why = json.loads(exc.read()).get("error", "")
        except (ValueError, AttributeError):
            why = ""
        message = f"the grading service answered {exc.code} {exc.reason}" + (f": {why}" if why else "")
        if exc.code >= 500:
            raise _Transient(message) from None
        raise ForwardError(message) from None
    except (urllib.error.URLError, OSError) as exc:
        raise _Transient(
            f"the grading service at {url.split('/submissions')[0]} could not be reached: "
            f"{getattr(exc, 'reason', None) or exc}"
        ) from None
    except ValueError:
        raise ForwardError("the grading service answered something that is not JSON") from None


def post_submission(
    url: str, problem, path: Path, seed: int | None, token: str | None, timeout: float = 1800, poll: float = 2.0
) -> dict:
    """The judge's report of the file at PATH for PROBLEM, judged by the service at URL; ForwardError when
    the service refuses it or cannot judge it within TIMEOUT seconds."""
    base = url.rstrip("/")
    deadline = time.monotonic() + timeout
    body = {
        "problem": str(problem),
        "filename": path.name,
        "source": base64.b64encode(path.read_bytes()).decode(),
        "seed": seed,
    }
    for attempt in range(3):
        try:
            accepted = _call(base + "/submissions", token, body)
            break
        except _Transient as exc:
            # Nothing was queued when the connection failed or the service failed to queue it: try again.
            if attempt == 2 or time.monotonic() > deadline:
                raise ForwardError(str(exc)) from None
            time.sleep(poll)
    job = accepted.get("id") if isinstance(accepted, dict) else None
    if not isinstance(job, str):
        raise ForwardError("the grading service answered without a job id")
    wait, last = poll, None
    while True:
        try:
            status = _call(f"{base}/submissions/{job}", token)
            if status.get("status") == "done":
                report = status.get("report")
                if not isinstance(report, dict) or "verdict" not in report:
                    raise ForwardError("the grading service answered something that is not a judge report")
                report.pop("seed", None)
                return report
        except _Transient as exc:
            last = exc  # the service restarting: the job is in its store, ask again
        if time.monotonic() + wait > deadline:
            why = f" (last: {last})" if last else ""
            raise ForwardError(f"the grading service did not finish job {job} within {timeout:g} s{why}")
        time.sleep(wait)
        wait = min(wait * 1.5, 10.0)
