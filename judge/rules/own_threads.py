"""The submission's own code started a thread or a process: all work must be its Triton kernels'."""

from judge.rules import Finding

STAGE = "evidence"


def check(evidence, outputs, context):
    started = evidence.started
    if not started:
        return None
    what = " and ".join(f"{n} {kind}{'s' if n > 1 else ''}" for kind, n in sorted(started.items()))
    if context.phase == "case":
        return Finding(
            f"the call started {what} of its own: all work must be done by your Triton kernels, in this "
            "process and on this thread",
            {"started": dict(started)},
        )
    return Finding(
        f"{context.where} the submission started {what} of its own while timed".strip(), {"started": dict(started)}
    )
