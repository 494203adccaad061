"""A compiled call whose graph calls none of the submission's operators: the callable it registered is not one.

The worker refuses to run such a graph (judge.untrusted.calls: WA "traced your callable inline"); this
rule holds the judge to it whatever the worker says: a compiled call's evidence must show Dynamo's graph
calling an operator of the namespace the judge gave (``<ns>::...``).
"""

from judge.rules import Finding
from judge.verdicts import Verdict

STAGE = "provenance"


def check(evidence, outputs, context):
    graph = evidence.graph_ops
    if graph is not None and not any(op.startswith("<ns>::") for op in graph):
        ops = ", ".join(dict.fromkeys(graph)) or "nothing"
        return Finding(
            "torch.compile traced your callable inline: the graph it captured calls no operator of the "
            f"namespace register() was given (it holds: {ops})",
            verdict=Verdict.WA,
        )
    return None
