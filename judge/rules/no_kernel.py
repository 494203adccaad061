"""No Triton kernel defined in the submission's own file was launched (by a call, or by some timed call)."""

from judge.rules import Finding

STAGE = "evidence"


def check(evidence, outputs, context):
    if context.phase == "timed":
        n = evidence.calls_without_own_launch
        if n:
            return Finding(f"{context.where} {n} timed call(s) launched no Triton kernel of {context.file}".strip())
        return None
    if evidence.own_launches:
        return None
    other = dict(evidence.other_launches)
    more = f" (it launched only kernels defined elsewhere: {', '.join(other)})" if other else ""
    prefix = f"{context.where} " if context.where else ""
    return Finding(
        f"{prefix}no Triton kernel defined in {context.file} was launched{more}",
        {"other_launches": other, "no_kernel": True},
    )
