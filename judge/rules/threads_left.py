"""Threads the submission started were still running after the call returned (work behind the judge's back)."""

from judge.rules import Finding

STAGE = "evidence"


def check(evidence, outputs, context):
    if not evidence.threads_left:
        return None
    return Finding(
        "threads the submission started were still running after it returned "
        f"({', '.join(evidence.threads_left)}): all work must be done by then",
        {"threads_left": list(evidence.threads_left)},
    )
