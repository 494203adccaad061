"""A PyTorch operator computed (part of) the answer: only allocation, views and copies may run outside kernels."""

from judge.rules import Finding

STAGE = "evidence"


def check(evidence, outputs, context):
    ops = evidence.torch_ops
    if not ops:
        return None
    listed = ", ".join(f"torch {op}" for op in sorted(ops))
    if context.phase == "case":
        return Finding(
            f"the answer was computed with PyTorch operators ({listed}); only allocation, views and "
            "copies may run outside your Triton kernels",
            {"torch_ops": dict(ops)},
        )
    timed = " in timed calls" if context.phase == "timed" else ""
    return Finding(
        f"{context.where} the answer was computed with PyTorch operators ({listed}){timed}".strip(),
        {"torch_ops": dict(ops)},
    )
