"""The call changed a global setting or swapped a function the judge relies on (judge.untrusted.integrity)."""

from judge.rules import Finding

STAGE = "evidence"


def check(evidence, outputs, context):
    if not evidence.tampered:
        return None
    names = ", ".join(evidence.tampered)
    if context.phase == "case":
        return Finding(f"the call changed what the judge relies on: {names}", {"tampered": list(evidence.tampered)})
    return Finding(
        f"while timed, the submission changed what the judge relies on: {names}", {"tampered": list(evidence.tampered)}
    )
