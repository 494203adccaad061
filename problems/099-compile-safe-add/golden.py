"""Problem 99, a torch.compile-safe add: the inputs, the float64 answer and the same-precision naive one.

The values are problem 93's (ragged sizes, views, values near the dtype's range, inf and NaN); what is new
is how the judge calls the operator (problem.toml's groups: directly, through torch.compile, through
autograd). The gradients are autograd's through ``golden`` and ``naive`` (judge.calls): d(x + y)/dx and
d(x + y)/dy are the cotangent itself.
"""

import torch

from judge import kit


def make_inputs(p, gen):
    dtype = kit.dtype_of(p["dtype"])
    n = p["n"]
    if p["scale"] == 0.0:
        # Special values among ordinary numbers: inf of both signs and NaN, in either input.
        x = kit.normal((n,), gen, torch.float32)
        y = kit.normal((n,), gen, torch.float32)
        pick = torch.randint(0, 5, (n,), generator=gen)
        special = torch.tensor([float("inf"), float("-inf"), float("nan")])
        x = torch.where(pick == 0, special[torch.randint(0, 3, (n,), generator=gen)], x)
        y = torch.where(pick == 1, special[torch.randint(0, 3, (n,), generator=gen)], y)
        x, y = x.to(dtype), y.to(dtype)
    else:
        # 1e4 overflows a float16 sum to inf now and then; 1e30 stays finite in float32.
        x = kit.normal((n,), gen, dtype, std=p["scale"])
        y = kit.normal((n,), gen, dtype, std=p["scale"])
    layout = p["layout"]
    if layout == "offset":
        return [kit.TensorInput(x, offset=5), kit.TensorInput(y, offset=2)]
    if layout == "strided":
        return [kit.TensorInput(x, step=2, offset=1), kit.TensorInput(y, step=3)]
    return [kit.TensorInput(x), kit.TensorInput(y)]


def golden(x, y):
    return x + y


def naive(x, y):
    return x + y
