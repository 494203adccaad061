"""The client of the grading service (``--forward URL``): post a submission, get the judge's report.

The request and the answers are described in judge.grading.forward (the service).
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from pathlib import Path


class ForwardError(Exception):
    """The grading service could not judge the submission (unreachable, refused, failed)."""


def post_submission(url: str, problem, path: Path, seed: int | None, token: str | None,
                    timeout: float = 1800) -> dict:
    body = json.dumps({"problem": str(problem), "filename": path.name,
                       "source": base64.b64encode(path.read_bytes()).decode(), "seed": seed}).encode()
    request = urllib.request.Request(url.rstrip("/") + "/grade", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            report = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        try:
            why = json.loads(exc.read()).get("error", "")
        except (ValueError, AttributeError):
            why = ""
        raise ForwardError(f"the grading service answered {exc.code} {exc.reason}" + (f": {why}" if why else "")) \
            from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise ForwardError(f"the grading service at {url} could not be reached: "
                           f"{getattr(exc, 'reason', None) or exc}") from None
    if not isinstance(report, dict) or "verdict" not in report:
        raise ForwardError("the grading service answered something that is not a judge report")
    return report
