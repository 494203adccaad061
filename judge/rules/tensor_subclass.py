"""A returned torch.Tensor subclass: its methods could compute inside the judge's own checks."""

from judge.rules import Finding

STAGE = "evidence"


def check(evidence, outputs, context):
    for out in outputs:
        if out.tensor_subclass:
            return Finding(
                f"the result is a torch.Tensor subclass ({out.type}): results must be plain tensors "
                "(a subclass can compute inside the judge's checks)"
            )
    return None
