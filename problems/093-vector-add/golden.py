"""Problem 93, vector add: inputs, the float64 answer, and the same-precision naive one."""

import torch

from judge import kit


def make_inputs(p, gen):
    dtype = kit.dtype_of(p["dtype"])
    n = p["n"]
    if p["scale"] == 0.0:
        # Special values: infinities of both signs and NaN, among ordinary numbers.
        x = kit.normal((n,), gen, torch.float32)
        y = kit.normal((n,), gen, torch.float32)
        pick = torch.randint(0, 5, (n,), generator=gen)
        special = torch.tensor([float("inf"), float("-inf"), float("nan")])
        x = torch.where(pick == 0, special[torch.randint(0, 3, (n,), generator=gen)], x)
        y = torch.where(pick == 1, special[torch.randint(0, 3, (n,), generator=gen)], y)
        x, y = x.to(dtype), y.to(dtype)
    else:
        # Scaled so that x + y overflows to inf in fp16 (1e4 * a few > 65504) and
        # bf16/fp32 see magnitudes near their limits (1e30 * ... in fp32/bf16 stays finite).
        x = kit.normal((n,), gen, dtype, std=p["scale"])
        y = kit.normal((n,), gen, dtype, std=p["scale"])
    layout = p["layout"]
    if layout == "offset":
        return [kit.TensorInput(x, offset=7), kit.TensorInput(y, offset=1)]
    if layout == "strided":
        # A 1-D view with stride 2 into a larger buffer (x[::2] of a 2n tensor).
        return [kit.TensorInput(x, step=2), kit.TensorInput(y, step=3, offset=2)]
    return [kit.TensorInput(x), kit.TensorInput(y)]


def golden(x, y):
    return x + y


def naive(x, y):
    return x + y


# ----------------------------------------------------------------------------- speed
# bench_args: the inputs of a timed call as data (see judge/untrusted/bench_inputs.py);
# the worker generates them on the GPU from a fresh seed for every call.
# work: (bytes that must move, tensor-core flops) of one call: the roofline.
# pytorch: the PyTorch baseline the report compares with (timed in a trusted worker).


def bench_args(p):
    t = {"kind": "tensor", "shape": [p["n"]], "dtype": p["dtype"]}
    return [t, dict(t)]


def work(p):
    size = torch.finfo(kit.dtype_of(p["dtype"])).bits // 8
    return 3 * p["n"] * size, 0


def pytorch(x, y):
    return torch.add(x, y)
