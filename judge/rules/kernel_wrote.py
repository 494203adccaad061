"""A right output whose memory none of the file's kernels was given: it was computed some other way."""

from judge.rules import Finding

STAGE = "provenance"


def check(evidence, outputs, context):
    for i, out in enumerate(outputs):
        if out.kind == "tensor" and not out.kernel_wrote and not out.derived:
            name = context.output_names[i] if i < len(context.output_names) else f"output {i + 1}"
            return Finding(
                f"{name} is right but none of your Triton kernels was given its memory: it was computed some other way"
            )
    return None
