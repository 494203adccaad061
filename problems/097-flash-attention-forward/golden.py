"""Problem 97, FlashAttention forward: inputs, the float64 answer, and the same-precision naive one."""

import math

import torch

from judge import kit

# Every q, k, v gets its own memory layout in the "mixed" case: heads interleaved
# with a storage offset, K stored as K^T (the head dim is the slow one) with gaps,
# and heads interleaved with gaps after each row.
MIXED = {
    "q": ("bnhd", 3),
    "k": ("transposed-padded", 0),
    "v": ("bnhd-padded", 1),
}


def _tensor(x, layout, which):
    if layout == "contiguous":
        return kit.TensorInput(x)
    if layout == "mixed":
        name, offset = MIXED[which]
        order, pad = kit.layout(name, 4)
        return kit.TensorInput(x, order=order, pad=pad, offset=offset)
    order, pad = kit.layout(layout, 4)
    return kit.TensorInput(x, order=order, pad=pad)


def make_inputs(p, gen):
    dtype = kit.dtype_of(p["dtype"])
    shape = (p["B"], p["H"], p["N"], p["D"])
    # qk_std (only in the "values" group) widens q and k so that the scores
    # reach the hundreds: exp without subtracting the row max overflows, and
    # a stale running max (no rescaling) is far off.
    std = float(p.get("qk_std", 1.0))
    q = kit.normal(shape, gen, dtype, std=std)
    k = kit.normal(shape, gen, dtype, std=std)
    v = kit.normal(shape, gen, dtype)
    layout = p["layout"]
    sm_scale = None if p["sm_scale"] == "default" else float(p["sm_scale"])
    return [_tensor(q, layout, "q"), _tensor(k, layout, "k"), _tensor(v, layout, "v"), bool(p["causal"]), sm_scale]


def _chunks(bh, n):
    """Slices over the flattened batch*heads so that one chunk's scores stay ~64 M elements."""
    step = max(1, (1 << 26) // max(1, n * n))
    return [slice(i, min(i + step, bh)) for i in range(0, bh, step)]


def _causal_mask(n, device):
    # True where key j > query i: those scores are masked out.
    return torch.ones(n, n, dtype=torch.bool, device=device).triu(1)


def golden(q, k, v, causal, sm_scale):
    B, H, N, D = q.shape
    scale = 1.0 / math.sqrt(D) if sm_scale is None else sm_scale
    qf, kf, vf = (t.reshape(B * H, N, D) for t in (q, k, v))
    o = torch.empty(B * H, N, D, dtype=torch.float64, device=q.device)
    lse = torch.empty(B * H, N, dtype=torch.float64, device=q.device)
    mask = _causal_mask(N, q.device) if causal else None
    for c in _chunks(B * H, N):
        s = torch.matmul(qf[c], kf[c].transpose(-1, -2)) * scale
        if causal:
            s = s.masked_fill(mask, float("-inf"))
        row_lse = torch.logsumexp(s, dim=-1)
        lse[c] = row_lse
        o[c] = torch.matmul(torch.exp(s - row_lse[..., None]), vf[c])
    return o.reshape(B, H, N, D), lse.reshape(B, H, N)


def naive(q, k, v, causal, sm_scale):
    """FlashAttention's own test reference at input precision (attention_ref, upcast=False).

    S = q @ k^T rounded to the dtype, times the scale, masked; P = softmax in
    float32 rounded to the dtype; o = P @ v rounded to the dtype; lse from the
    float32 scaled scores. The matmuls run in float32 on the upcast values (so
    this is the same on a CPU and a GPU); each rounding is made explicit.
    """
    dtype = q.dtype
    B, H, N, D = q.shape
    scale = 1.0 / math.sqrt(D) if sm_scale is None else sm_scale
    qf, kf, vf = (t.reshape(B * H, N, D).to(torch.float32) for t in (q, k, v))
    o = torch.empty(B * H, N, D, dtype=torch.float32, device=q.device)
    lse = torch.empty(B * H, N, dtype=torch.float32, device=q.device)
    mask = _causal_mask(N, q.device) if causal else None
    for c in _chunks(B * H, N):
        s = kit.round_to(torch.matmul(qf[c], kf[c].transpose(-1, -2)), dtype) * scale
        if causal:
            s = s.masked_fill(mask, float("-inf"))
        lse[c] = torch.logsumexp(s, dim=-1)
        p = kit.round_to(torch.softmax(s, dim=-1), dtype)
        o[c] = kit.round_to(torch.matmul(p, vf[c]), dtype)
    return o.reshape(B, H, N, D), lse.reshape(B, H, N)


# ----------------------------------------------------------------------------- speed
# See problems/README.md: bench_args (inputs as data, generated on the GPU per
# timed call), work (bytes, tensor-core flops), pytorch (the baseline: SDPA,
# which returns o only; the logsumexp a submission also writes is N floats a row).


def bench_args(p):
    t = {"kind": "tensor", "shape": [p["B"], p["H"], p["N"], p["D"]], "dtype": p["dtype"]}
    return [t, dict(t), dict(t), {"kind": "scalar", "value": bool(p["causal"])}, {"kind": "none"}]


def work(p):
    size = torch.finfo(kit.dtype_of(p["dtype"])).bits // 8
    b, h, n, d = p["B"], p["H"], p["N"], p["D"]
    flops = 4 * b * h * n * n * d  # q k^T and P v
    return 4 * b * h * n * d * size + 4 * b * h * n, flops // 2 if p["causal"] else flops


def pytorch(q, k, v, causal, sm_scale):
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=bool(causal), scale=sm_scale)
