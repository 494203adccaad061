"""Problem 95, matmul: inputs, the float64 answer, and the same-precision naive one.

Parameters of a case: M, N, K (sizes), dtype, la / lb (memory layouts of a and
b, kit.layout names) and dist, how the values are drawn:

* ``normal``        a, b ~ N(0, 1)
* ``positive-mean`` a, b ~ N(1, 1): every product is positive on average, so a
                    row of c grows like K
* ``big-then-small`` positive values; the first 16 terms of each dot product
                    are large (together about 45000) and the other K - 16 small
                    (about 0.11 each in float16 and float32, 0.88 in bfloat16).
                    A running sum kept in float16 has an ulp of 32 there (256 in
                    bfloat16), so a block of up to 128 small terms (under half an
                    ulp) rounds away: the sum stops growing and loses the whole
                    tail, about 0.11 * K (0.88 * K), 1.6 to 8 times the tolerance
                    for K from 2048 to 8192. This is what the long-K group is for.
* ``tiny``          N(0, s) with s = 1e-3 in float16 (results in the subnormal
                    range) and 1e-15 in bfloat16/float32 (products near 1e-30)
* ``huge``          float16: s chosen so that c has a standard deviation of
                    about 1000 (large but far from the overflow at 65504);
                    bfloat16/float32: s = 1e15 (products near 1e30)
* ``cancel``        the second half of a's columns repeats the first half and
                    the second half of b's rows is the negated first half plus
                    a small difference (1/16): the terms are of size 1 but c is
                    about 16 times smaller, with large partial sums on the way
"""

import math

import torch

from judge import kit


def _layout(values, name):
    order, pad = kit.layout(name, values.dim())
    return kit.TensorInput(values, order=order, pad=pad)


def make_inputs(p, gen):
    dtype = kit.dtype_of(p["dtype"])
    M, N, K = p["M"], p["N"], p["K"]
    dist = p["dist"]
    f32 = torch.float32
    if dist == "normal":
        a = kit.normal((M, K), gen, f32)
        b = kit.normal((K, N), gen, f32)
    elif dist == "positive-mean":
        a = kit.normal((M, K), gen, f32, mean=1.0)
        b = kit.normal((K, N), gen, f32, mean=1.0)
    elif dist == "big-then-small":
        # Head: 16 products of about 2800 (u * v with u, v in [0.9, 1.1]);
        # tail: products of about t (u, v in [0.5, 1.5]) with t under 1/256 of
        # the sum's ulp in the dtype (32 in float16, 256 in bfloat16 near 45000).
        head = min(K, 16)
        t = 0.88 if dtype == torch.bfloat16 else 0.11
        su = torch.full((K,), math.sqrt(t))
        su[:head] = math.sqrt(2800.0)
        wa = torch.where(torch.arange(K) < head, 0.1, 0.5)
        a = (1 + wa * kit.uniform((M, K), gen, f32)) * su
        b = (1 + wa[:, None] * kit.uniform((K, N), gen, f32)) * su[:, None]
    elif dist in ("tiny", "huge"):
        if dist == "tiny":
            s = 1e-3 if dtype == torch.float16 else 1e-15
        else:
            s = math.sqrt(1000.0 / math.sqrt(K)) if dtype == torch.float16 else 1e15
        a = kit.normal((M, K), gen, f32, std=s)
        b = kit.normal((K, N), gen, f32, std=s)
    elif dist == "cancel":
        a = kit.normal((M, K), gen, f32)
        b = kit.normal((K, N), gen, f32)
        d = kit.normal((K, N), gen, f32, std=1.0 / 16)
        h = K // 2
        a[:, h:2 * h] = a[:, :h]
        b[h:2 * h] = -b[:h] + d[:h]
        a[:, 2 * h:] *= 1.0 / 16  # an odd K's last column: keep it as small as the result
    else:
        raise ValueError(f"unknown dist {dist!r}")
    return [_layout(a.to(dtype), p["la"]), _layout(b.to(dtype), p["lb"])]


def golden(a, b):
    return a @ b


def naive(a, b):
    if a.dtype == torch.float32:
        # TF32-aware: the GPU's tl.dot truncates float32 operands to TF32 (see
        # kit.truncate_tf32) and accumulates in float32. (The interpreter
        # computes exactly: smaller errors.)
        return kit.truncate_tf32(a) @ kit.truncate_tf32(b)
    # float16/bfloat16: products exact in float32, float32 accumulation, one rounding.
    return (a.float() @ b.float()).to(a.dtype)


# ----------------------------------------------------------------------------- speed
# See problems/README.md: bench_args (inputs as data, generated on the GPU per
# timed call), work (bytes, tensor-core flops), pytorch (the baseline: cuBLAS).


def bench_args(p):
    return [{"kind": "tensor", "shape": [p["M"], p["K"]], "dtype": p["dtype"]},
            {"kind": "tensor", "shape": [p["K"], p["N"]], "dtype": p["dtype"]}]


def work(p):
    size = torch.finfo(kit.dtype_of(p["dtype"])).bits // 8
    m, n, k = p["M"], p["N"], p["K"]
    return (m * k + k * n + m * n) * size, 2 * m * n * k


def pytorch(a, b):
    return torch.matmul(a, b)


# ----------------------------------------------------------------------------- hints
# See problems/README.md, "Hints": what a kernel with a known mistake returns,
# computed from the case's inputs (float64 here).


def mistakes(a, b):
    # The running sum of the K loop kept in float16/bfloat16: each block's
    # tl.dot (exact products, a float32 sum) rounded to the dtype and added to a
    # sum rounded to the dtype after every block. Only matters when it is not float32.
    k = a.shape[1]
    for dtype in (torch.float16, torch.bfloat16):
        if not (_representable(a, dtype) and _representable(b, dtype)):
            continue
        for block in (16, 32, 64, 128, 256):
            if block > max(k, 16) * 2:
                break
            acc = torch.zeros(a.shape[0], b.shape[1], dtype=dtype, device=a.device)
            for k0 in range(0, k, block):
                part = (a[:, k0:k0 + block].float() @ b[k0:k0 + block].float()).to(dtype)
                acc = (acc.float() + part.float()).to(dtype)
            name = str(dtype).removeprefix("torch.")
            yield ("low_precision_accumulator",
                   f"the output is what a K loop computes when its running sum is kept in {name} (an accumulator "
                   f"made with the inputs' dtype, or each tl.dot cast down before it is added): every addition "
                   f"rounds to {name}, and once the sum is large the later blocks' small contributions round "
                   f"away, an error that grows with K (K = {k} here). Keep acc in float32 "
                   "(tl.zeros(..., dtype=tl.float32)) and cast once, when storing c", acc.double())


def _representable(x, dtype):
    """Does x hold values of this dtype (is that the case's dtype)?"""
    return bool((x.to(dtype).double() == x).all())
