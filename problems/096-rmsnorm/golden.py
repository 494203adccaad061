"""Problem 96, RMSNorm: inputs, the float64 answer, and the fp32-statistics PyTorch one."""

import torch

from judge import kit

# Row magnitudes of the "huge" values: in float16, x*x overflows (|x| > 256 gives
# x*x > 65504), so statistics kept in float16 turn into inf; float32 and bfloat16
# share float32's range, so their huge rows are far larger, yet small enough that
# a float32 sum of squares of 32768 of them stays finite.
HUGE_LOG10 = {"float16": (2.5, 3.3), "float32": (10.0, 15.0), "bfloat16": (10.0, 15.0)}


def _log_uniform(gen, lo, hi, size):
    return 10.0 ** (torch.rand(size, generator=gen, dtype=torch.float64) * (hi - lo) + lo)


def _rows(kind_of_row, n, gen, dtype_name):
    """One float32 row per kind: 'normal', 'shifted', 'tiny', 'zero', 'const', 'const-tiny',
    'huge', 'const-huge'."""
    rows = []
    for kind in kind_of_row:
        z = torch.randn(n, generator=gen, dtype=torch.float32)
        if kind == "normal":
            rows.append(z * float(_log_uniform(gen, -1.0, 1.0, 1)))
        elif kind == "shifted":
            # Not zero-mean: variance (x - mean)^2 and mean of squares differ a lot.
            shift = float(torch.rand(1, generator=gen)) * 6.0 - 3.0
            rows.append(z + (shift if abs(shift) > 1.0 else 2.0))
        elif kind == "tiny":
            rows.append(z * float(_log_uniform(gen, -3.0, -2.0, 1)))
        elif kind == "zero":
            rows.append(torch.zeros(n))
        elif kind == "const":
            c = float(_log_uniform(gen, -1.0, 1.0, 1)) * (1 if float(torch.rand(1, generator=gen)) < 0.5 else -1)
            rows.append(torch.full((n,), c))
        elif kind == "const-tiny":
            c = float(_log_uniform(gen, -3.0, -2.0, 1)) * (1 if float(torch.rand(1, generator=gen)) < 0.5 else -1)
            rows.append(torch.full((n,), c))
        elif kind in ("huge", "const-huge"):
            lo, hi = HUGE_LOG10[dtype_name]
            s = float(_log_uniform(gen, lo, hi, 1))
            rows.append(z * s if kind == "huge" else torch.full((n,), s * (1 if float(torch.rand(1, generator=gen)) < 0.5 else -1)))
        else:
            raise ValueError(kind)
    return torch.stack(rows) if rows else torch.empty(0, n)


# Which row kinds each `values` setting cycles through (row i gets kinds[(i + k) % len]
# for a random k, so every kind is present once m >= len(kinds)).
KINDS = {
    "normal": ["normal", "shifted"],
    "tiny": ["tiny", "zero", "const-tiny", "tiny", "const", "normal"],
    "huge": ["huge", "const-huge", "huge", "normal"],
}


def make_inputs(p, gen):
    dtype = kit.dtype_of(p["dtype"])
    m, n = p["m"], p["n"]
    kinds = KINDS[p["values"]]
    k = int(torch.randint(0, len(kinds), (1,), generator=gen))
    x = _rows([kinds[(i + k) % len(kinds)] for i in range(m)], n, gen, p["dtype"]).to(dtype)
    # Gain: both signs, magnitudes from 0.1 to about 5 (times |N(0,1)|).
    w = (torch.randn(n, generator=gen) * _log_uniform(gen, -1.0, 0.7, n).float()).to(dtype)
    layout = p["layout"]
    if layout == "padded":
        xin = kit.TensorInput(x, pad=3)  # row stride n + 3
    elif layout == "sliced":
        xin = kit.TensorInput(x, pad=61, offset=5)  # x[:, :n] of a wider buffer, offset start
    else:
        xin = kit.TensorInput(x)
    return [xin, kit.TensorInput(w), float(p["eps"])]


def golden(x, weight, eps):
    return x / torch.sqrt((x * x).mean(dim=-1, keepdim=True) + eps) * weight


def naive(x, weight, eps):
    # The usual PyTorch module (e.g. LLaMA's): statistics in float32, the normalized
    # row rounded to the input dtype, then multiplied by the weight in that dtype.
    xf = x.float()
    var = xf.pow(2).mean(-1, keepdim=True)
    normed = (xf * torch.rsqrt(var + eps)).to(x.dtype)
    return weight * normed


# ----------------------------------------------------------------------------- speed
# See problems/README.md: bench_args (inputs as data, generated on the GPU per
# timed call), work (bytes, tensor-core flops), pytorch (the baseline).


def bench_args(p):
    return [{"kind": "tensor", "shape": [p["m"], p["n"]], "dtype": p["dtype"]},
            {"kind": "tensor", "shape": [p["n"]], "dtype": p["dtype"]},
            {"kind": "scalar", "value": float(p.get("eps", 1e-6))}]


def work(p):
    size = torch.finfo(kit.dtype_of(p["dtype"])).bits // 8
    return (2 * p["m"] * p["n"] + p["n"]) * size, 0


def pytorch(x, weight, eps):
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, eps)
