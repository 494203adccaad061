"""What a student reads about one test group on a grading platform (Gradescope, PrairieLearn)."""

from __future__ import annotations

import json


def group_output(g: dict, whole_file: str = "") -> str:
    """The group's result in a few lines: passed, why it was skipped, or its failure with the case and reproduce
    line. WHOLE_FILE: the report's message, for a group that failed with the whole file (a compile error before
    any case ran) and so has no message of its own."""
    if g["passed"]:
        return "passed"
    if g.get("skipped"):
        return g["skipped"]
    f = g.get("failure") or {}
    lines = [f"{g['verdict']}: {f.get('message') or whole_file or 'the whole file failed'}"]
    if f.get("case") is not None:
        lines.append(f"case: {json.dumps(f['case'])}")
    details = f.get("details") or {}
    for key in ("pattern", "hint"):
        if details.get(key):
            lines.append(f"{key}: {details[key]}")
    if f.get("reproduce"):
        lines.append(f"reproduce: {f['reproduce']}")
    return "\n".join(lines)
