"""Problem 98, FlashAttention backward: inputs, the float64 gradients, and the same-precision naive ones.

The inputs are what a FlashAttention forward hands its backward: q, k, v, the
output o (rounded to the dtype) and the natural-log logsumexp lse of each query
row (float32), both from an exact float64 forward, plus the incoming gradient
do. The (batch, head) slices are handled a batch of them at a time, so that
the N x N score matrices stay within about 256 MiB (N = 4096 is 128 MiB of
float64 per slice) and small slices still run as a few batched matmuls.
"""

import math

import torch

from judge import kit

# make_inputs builds q, k, v, o and do with these layouts (lse is 3-D). "mixed"
# gives the five 4-D tensors five different layouts, so that a kernel that
# borrows one tensor's strides for another reads the wrong elements.
MIXED = {
    "q": ("bnhd", 3),
    "k": ("padded", 0),
    "v": ("bnhd-padded", 5),
    "o": ("contiguous", 2),
    "do": ("bnhd-padded", 1),
    "lse": ("padded", 4),
}


# values -> (mean of q, the negated mean of k; std of q and k; std of do).
# "peaky": scores with a spread of ~36, so exp(S) alone overflows float32 and
# softmax rows are nearly one-hot. "negative": q and k point opposite ways, so
# every score and every lse is below -88 (exp(-lse) overflows float32).
VALUES = {
    "normal": (0.0, 1.0, 1.0),
    "peaky": (0.0, 6.0, 1.0),
    "negative": (6.0, 1.0, 1.0),
    "big-grad": (0.0, 1.0, 30.0),
    "tiny-grad": (0.0, 1.0, 1e-2),
}


def _scale(sm_scale, d):
    return 1.0 / math.sqrt(d) if sm_scale is None else float(sm_scale)


def _scores(q, k, scale, causal):
    """Scaled scores of a batch of (batch, head) slices, causally masked with -inf."""
    s = (q @ k.transpose(-1, -2)) * scale
    if causal:
        n = s.shape[-1]
        keep = torch.ones(n, n, dtype=torch.bool, device=s.device).tril()
        s = s.masked_fill(~keep, float("-inf"))
    return s


def _chunks(q):
    """Slices of the flattened (batch x head) dimension, each a few score matrices big."""
    b, h, n, _ = q.shape
    step = max(1, (1 << 25) // max(1, n * n))  # 2^25 float64 scores: 256 MiB
    return [slice(s, min(s + step, b * h)) for s in range(0, b * h, step)]


def _flat(t):
    """(b, h, ...) -> (b * h, ...), a view where the layout allows."""
    return t.reshape(t.shape[0] * t.shape[1], *t.shape[2:])


def _tensor(values, layout, offset=0):
    order, pad = kit.layout(layout, values.dim())
    return kit.TensorInput(values, order=order, pad=pad, offset=offset)


def make_inputs(p, gen):
    dtype = kit.dtype_of(p["dtype"])
    b, h, n, d = p["b"], p["h"], p["n"], p["d"]
    causal = bool(p["causal"])
    sm_scale = None if p["sm_scale"] == "default" else float(p["sm_scale"])
    scale = _scale(sm_scale, d)
    shape = (b, h, n, d)
    q_mean, qk_std, do_std = VALUES[p["values"]]
    q = kit.normal(shape, gen, dtype, std=qk_std, mean=q_mean)
    k = kit.normal(shape, gen, dtype, std=qk_std, mean=-q_mean)
    v = kit.normal(shape, gen, dtype)
    do = kit.normal(shape, gen, dtype, std=do_std)

    # The golden forward, in float64 from the rounded q, k, v: on the judge's GPU when it has one
    # (kit.heavy), where a 4096-row case takes milliseconds instead of seconds of CPU.
    o, lse = kit.heavy(lambda q, k, v: _forward(q, k, v, scale, causal), q, k, v)

    layout = p["layout"]
    tensors = {"q": q, "k": k, "v": v, "o": o, "do": do, "lse": lse}
    if layout == "mixed":
        made = {name: _tensor(t, *MIXED[name]) for name, t in tensors.items()}
    else:
        lse_layout = "padded" if layout.endswith("padded") else "contiguous"
        made = {name: _tensor(t, layout if t.dim() == 4 else lse_layout) for name, t in tensors.items()}
    return [made["q"], made["k"], made["v"], made["o"], made["lse"], made["do"], causal, sm_scale]


def _forward(q, k, v, scale, causal):
    """o (in q's dtype) and lse (float32) of the exact forward, in float64, a chunk of heads at a time."""
    b, h, n, _ = q.shape
    o = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    lse = torch.empty((b, h, n), dtype=torch.float32, device=q.device)
    qf, kf, vf, of, lf = _flat(q), _flat(k), _flat(v), _flat(o), _flat(lse)
    for c in _chunks(q):
        s = _scores(qf[c].double(), kf[c].double(), scale, causal)
        m = torch.logsumexp(s, dim=-1)
        of[c] = (torch.exp(s - m[..., None]) @ vf[c].double()).to(q.dtype)
        lf[c] = m.to(torch.float32)
    return o, lse


def golden(q, k, v, o, lse, do, causal, sm_scale):
    """Exact gradients for the given o: P recomputed exactly from q, k (lse unused).

    D_i = rowsum(dO * O) is taken with the o that was handed over (its values
    exactly, in float64), not with the unrounded forward output: a backward
    cannot know the latter, and o's rounding error then enters every kernel's
    dS and the naive one's alike. Near one-hot softmax rows dP - D_i cancels, so
    that shared error would dominate, and the naive one can cancel it by luck,
    which made the row tolerance reject correct kernels.
    """
    b, h, n, d = q.shape
    scale = _scale(sm_scale, d)
    dq, dk, dv = (torch.empty(q.shape, dtype=q.dtype, device=q.device) for _ in range(3))
    qf, kf, vf, of, gf = _flat(q), _flat(k), _flat(v), _flat(o), _flat(do)
    dqf, dkf, dvf = _flat(dq), _flat(dk), _flat(dv)
    for c in _chunks(q):
        s = _scores(qf[c], kf[c], scale, causal)
        p = torch.softmax(s, dim=-1)
        g = gf[c]
        dvf[c] = p.transpose(-1, -2) @ g
        dp = g @ vf[c].transpose(-1, -2)
        delta = (g * of[c]).sum(-1, keepdim=True)
        ds = p * (dp - delta)
        dqf[c] = (ds @ kf[c]) * scale
        dkf[c] = (ds.transpose(-1, -2) @ qf[c]) * scale
    return dq, dk, dv


def naive(q, k, v, o, lse, do, causal, sm_scale):
    """The textbook backward in float32, rounded to the dtype where fp16/bf16 PyTorch would round.

    It uses the given o and lse, as a real backward must: S, P, dV, dP, dS, dQ
    and dK are each rounded once to the input dtype.
    """
    dtype = q.dtype
    b, h, n, d = q.shape
    scale = _scale(sm_scale, d)

    def r(x):
        return kit.round_to(x, dtype)

    dq = torch.empty(q.shape, dtype=torch.float32, device=q.device)
    dk, dv = torch.empty_like(dq), torch.empty_like(dq)
    qa, ka, va, oa, ga, la = (_flat(t) for t in (q, k, v, o, do, lse))
    dqa, dka, dva = _flat(dq), _flat(dk), _flat(dv)
    for c in _chunks(q):
        qf, kf, vf = qa[c].float(), ka[c].float(), va[c].float()
        of, gf, lf = oa[c].float(), ga[c].float(), la[c].float()
        s = r(_scores(qf, kf, scale, causal))
        p = r(torch.exp(s - lf[..., None]))
        dva[c] = r(p.transpose(-1, -2) @ gf)
        dp = r(gf @ vf.transpose(-1, -2))
        delta = (gf * of).sum(-1, keepdim=True)
        ds = r(p * (dp - delta))
        dqa[c] = r((ds @ kf) * scale)
        dka[c] = r((ds.transpose(-1, -2) @ qf) * scale)
    return dq, dk, dv


# ----------------------------------------------------------------------------- speed
# See problems/README.md: bench_args (inputs as data, generated on the GPU per
# timed call: o and lse are the forward's, computed from q, k, v there), work
# (bytes, tensor-core flops), pytorch (the baseline: SDPA's backward through
# autograd; bench_prepare runs its forward outside the timed call).


def bench_args(p):
    b, h, n, d = p["b"], p["h"], p["n"], p["d"]
    t = {"kind": "tensor", "shape": [b, h, n, d], "dtype": p["dtype"]}
    att = {"kind": "attention", "q": 0, "k": 1, "v": 2, "causal": bool(p["causal"]), "scale": 1.0 / math.sqrt(d)}
    return [t, dict(t), dict(t), {**att, "part": "o"}, {**att, "part": "lse"}, dict(t),
            {"kind": "scalar", "value": bool(p["causal"])}, {"kind": "none"}]


def work(p):
    size = torch.finfo(kit.dtype_of(p["dtype"])).bits // 8
    b, h, n, d = p["b"], p["h"], p["n"], p["d"]
    flops = 10 * b * h * n * n * d  # five n x n x d matmuls: 2.5 times the forward's
    return 8 * b * h * n * d * size + 4 * b * h * n, flops // 2 if p["causal"] else flops


def bench_prepare(q, k, v, o, lse, do, causal, sm_scale):
    """The forward pass of the PyTorch baseline, outside the timed call (trusted worker only)."""
    q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=bool(causal), scale=sm_scale)
    return q, k, v, out, lse, do, causal, sm_scale


def pytorch(q, k, v, o, lse, do, causal, sm_scale):
    if not o.requires_grad:  # not prepared: forward and backward
        q, k, v, o, lse, do, causal, sm_scale = bench_prepare(q, k, v, o, lse, do, causal, sm_scale)
    return torch.autograd.grad(o, (q, k, v), do, retain_graph=True)


# ----------------------------------------------------------------------------- hints
# See problems/README.md, "Hints": what a kernel with a known mistake returns,
# computed from the case's inputs (float64 here). A backward recomputes P from
# the lse it is handed: P = exp(S - lse), whatever scale it puts into S.


def _grads(q, k, v, o, lse, do, causal, score_scale, grad_scale, lse_factor=1.0, delta=True, strict=False):
    b, h, n, d = q.shape
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    for i in range(b):
        for j in range(h):
            s = _scores(q[i, j], k[i, j], score_scale, causal)
            if strict:
                s = s.masked_fill(torch.eye(n, dtype=torch.bool, device=s.device), float("-inf"))
            p = torch.exp(s - lse[i, j][:, None] * lse_factor)
            g = do[i, j]
            dv[i, j] = p.transpose(-1, -2) @ g
            dp = g @ v[i, j].transpose(-1, -2)
            ds = p * (dp - (g * o[i, j]).sum(-1, keepdim=True)) if delta else p * dp
            dq[i, j] = (ds @ k[i, j]) * grad_scale
            dk[i, j] = (ds.transpose(-1, -2) @ q[i, j]) * grad_scale
    return dq, dk, dv


def mistakes(q, k, v, o, lse, do, causal, sm_scale):
    d = q.shape[-1]
    scale = _scale(sm_scale, d)
    yield ("missing_delta", "dS is computed as P * dP, without the D_i term: dS = P * (dP - D_i) with "
           "D_i = rowsum(dO * O) per query row (compute it first, in a preprocessing pass). dV does not need it, "
           "so dV is right while dQ and dK are not",
           _grads(q, k, v, o, lse, do, causal, scale, scale, delta=False))
    yield ("lse_base", "P is recomputed as exp2(S * log2(e) - lse) with the natural-log lse of the forward: that "
           "is exp(S - lse * ln(2)), not exp(S - lse). With exp2, multiply lse by log2(e) too (or use exp)",
           _grads(q, k, v, o, lse, do, causal, scale, scale, lse_factor=LN2))
    yield ("sm_scale", f"dS is not multiplied by sm_scale ({scale:.4g}): dQ and dK are 1/sm_scale = "
           f"{1 / scale:.4g} times too large. dQ = dS K * sm_scale and dK = dS^T Q * sm_scale",
           _grads(q, k, v, o, lse, do, causal, scale, 1.0))
    if causal:
        yield ("causal_strict", "the gradients are those of a causal mask that keeps keys j < i instead of j <= i: "
               "every query loses its own key, and query 0 sees none (P = 0 there). Keep "
               "offs_m[:, None] >= offs_n[None, :]", _grads(q, k, v, o, lse, do, causal, scale, scale, strict=True))
    tried = {scale}
    for used, why in (
        (1.0 / math.sqrt(d), f"1/sqrt(d) = {1 / math.sqrt(d):.4g}, ignoring the sm_scale argument ({sm_scale})"),
        (1.0, f"1 (no scale at all) instead of sm_scale = {scale:.4g}"),
        (scale * math.sqrt(d), f"sm_scale * sqrt(d) = {scale * math.sqrt(d):.4g}: off by sqrt(d)"),
        (scale / math.sqrt(d), f"sm_scale / sqrt(d) = {scale / math.sqrt(d):.4g}: 1/sqrt(d) applied twice"),
    ):
        if any(abs(used - t) <= 1e-9 * abs(t) for t in tried):
            continue
        tried.add(used)
        yield ("sm_scale", f"the gradients are those of scores scaled by {why}. Use sm_scale (1/sqrt(d) when "
               "it is None) for S and for dS, exactly once each", _grads(q, k, v, o, lse, do, causal, used, used))


LN2 = math.log(2.0)
