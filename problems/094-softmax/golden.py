"""Problem 94, row-wise softmax: inputs, the float64 answer, and the same-precision naive one.

Parameters of a case: M, N (the shape), dtype, layout ("contiguous" or
"padded": 3 NaN elements after every row, so x.stride(0) == N + 3) and
values, the kind of logits:

* ``normal``   - N(0, 2^2) logits;
* ``extreme``  - per row, either uniform in [-1e4, 1e4] or a cluster of
  width ~30 around a centre c with |c| in [5e3, 1e4]: exp() of them without
  subtracting the row maximum overflows (or underflows every term to 0);
* ``dominant`` - N(0, 1) logits plus one logit per row raised by 10^U(1.5, 4)
  (about 32 to 1e4): the answer is close to one-hot;
* ``constant`` - every logit of a row equal (0, +-1e4 or a random value):
  the answer is exactly 1/N;
* ``negative`` - logits N(-c, 1) with c in [100, 1e4]: every logit is far
  below zero, so a masked lane that reads 0.0 instead of -inf wins the max;
* ``ramp``     - logits rising along the row (0 to 30, plus N(0, 0.1)
  noise), so the running maximum of a tiled pass grows in every tile.

All values are drawn in float32, clamped to [-1e4, 1e4] and rounded once to
the case's dtype; +-1e4 is finite in float16 and bfloat16 too.
"""

import torch

from judge import kit


def _logits(p, gen):
    m, n, kind = p["M"], p["N"], p["values"]
    if kind == "normal":
        return kit.normal((m, n), gen, torch.float32, std=2.0)
    if kind == "extreme":
        wide = kit.uniform((m, n), gen, torch.float32, -1e4, 1e4)
        sign = torch.where(torch.rand((m, 1), generator=gen) < 0.5, -1.0, 1.0)
        centre = sign * kit.uniform((m, 1), gen, torch.float32, 5e3, 1e4)
        cluster = (centre + kit.normal((m, n), gen, torch.float32, std=10.0)).clamp(-1e4, 1e4)
        pick = torch.rand((m, 1), generator=gen) < 0.5
        return torch.where(pick, wide, cluster)
    if kind == "dominant":
        x = kit.normal((m, n), gen, torch.float32)
        col = torch.randint(0, n, (m,), generator=gen)
        lift = 10.0 ** kit.uniform((m,), gen, torch.float32, 1.5, 4.0)
        x[torch.arange(m), col] += lift
        return x
    if kind == "constant":
        choice = torch.randint(0, 4, (m, 1), generator=gen)
        value = torch.where(choice == 0, 0.0, torch.where(choice == 1, 1e4, torch.where(
            choice == 2, -1e4, kit.normal((m, 1), gen, torch.float32, std=100.0))))
        return value.expand(m, n).clone()
    if kind == "negative":
        centre = 10.0 ** kit.uniform((m, 1), gen, torch.float32, 2.0, 4.0)
        return kit.normal((m, n), gen, torch.float32) - centre
    if kind == "ramp":
        ramp = torch.linspace(0.0, 30.0, n).expand(m, n)
        return ramp + kit.normal((m, n), gen, torch.float32, std=0.1)
    raise ValueError(f"unknown values kind {kind!r}")


def make_inputs(p, gen):
    dtype = kit.dtype_of(p["dtype"])
    x = _logits(p, gen).clamp(-1e4, 1e4).to(dtype)
    order, pad = kit.layout(p["layout"], 2)
    return [kit.TensorInput(x, order=order, pad=pad)]


def golden(x):
    return torch.softmax(x, dim=-1)


def naive(x):
    # What a PyTorch user writes; for float16/bfloat16 PyTorch computes in
    # float32 internally and rounds the result once.
    return torch.softmax(x, dim=-1)


# ----------------------------------------------------------------------------- speed
# See problems/README.md: bench_args (inputs as data, generated on the GPU per
# timed call), work (bytes, tensor-core flops), pytorch (the baseline).


def bench_args(p):
    return [{"kind": "tensor", "shape": [p["M"], p["N"]], "dtype": p["dtype"], "std": 3.0}]


def work(p):
    size = torch.finfo(kit.dtype_of(p["dtype"])).bits // 8
    return 2 * p["M"] * p["N"] * size, 0


def pytorch(x):
    return torch.softmax(x, dim=-1)


# ----------------------------------------------------------------------------- hints
# See problems/README.md, "Hints": what a kernel with a known mistake returns,
# computed from the case's inputs (float64 here). When a wrong output is one of
# these, the report names the mistake.


def mistakes(x):
    n = x.shape[-1]
    # Masked lanes loaded as 0.0 instead of -inf: with the row in one block of
    # next_power_of_2(N), or in tiles of a looped kernel, the last block's
    # lanes past N join the max and the sum as zeros.
    whole = 1 << max(n - 1, 0).bit_length()
    for block in [whole] + [1 << b for b in range(4, 13) if (1 << b) != whole]:
        pad = -n % block
        if pad == 0:
            continue
        padded = torch.cat([x, x.new_zeros(*x.shape[:-1], pad)], dim=-1)
        negative = bool((x.amax(dim=-1) < 0).any())
        yield ("masked_tail_other",
               f"the output is what the kernel computes when the {pad} masked lanes past the end of each row "
               f"(N = {n} in blocks of {block}) are loaded as 0.0: they join the row's max and sum"
               + (", and on rows whose logits are all below zero the 0.0 wins the max, so the real outputs "
                  "collapse towards 0" if negative else "")
               + ". Load masked lanes with other=-float('inf'), which never wins a max and adds exp(-inf) = 0",
               torch.softmax(padded, dim=-1)[..., :n])
    # No max subtraction: exp of the logits themselves, in float32.
    e = torch.exp(x.float())
    low, high = (float(x.min()), float(x.max())) if x.numel() else (0.0, 0.0)
    yield ("max_subtraction",
           "the output is exp(x) / sum(exp(x)) without subtracting the row's maximum first: exp overflows to "
           f"inf above x = 88 (inf / inf = NaN), and where every term underflows to 0 far below zero, 0 / 0 = NaN "
           f"(this case's logits run from {low:.4g} to {high:.4g}). Subtract the row's max before exp: "
           "softmax(x) = softmax(x - max(x))",
           (e / e.sum(dim=-1, keepdim=True)).double())
