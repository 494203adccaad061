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


# ----------------------------------------------------------------------------- hints
# See problems/README.md, "Hints": what a kernel with a known mistake returns,
# computed from the case's inputs (float64 here). When a wrong output is one of
# these, the report names the mistake.


def _attend(q, k, v, causal, scale, nomax=None):
    """(o, lse) of softmax(scale * q k^T) v, slice by slice; k and v may have more rows than q (keys past N),
    which the causal mask hides from every query. With ``nomax`` (a dtype): no max subtraction, p = exp(s) and
    its sum in float32, p rounded to ``nomax`` for the product with v (as tl.dot(p.to(v.dtype), v) does)."""
    B, H, N, D = q.shape
    nk = k.shape[2]
    o = torch.empty(B * H, N, D, dtype=torch.float64, device=q.device)
    lse = torch.empty(B * H, N, dtype=torch.float64, device=q.device)
    qf, kf, vf = q.reshape(B * H, N, D), k.reshape(B * H, nk, D), v.reshape(B * H, nk, D)
    hide = torch.ones(N, nk, dtype=torch.bool, device=q.device).triu(1) if causal else None
    for c in _chunks(B * H, max(N, nk)):
        s = torch.matmul(qf[c], kf[c].transpose(-1, -2)) * scale
        if causal:
            s = s.masked_fill(hide, float("-inf"))
        if nomax is None:
            row_lse = torch.logsumexp(s, dim=-1)
            o[c] = torch.matmul(torch.exp(s - row_lse[..., None]), vf[c])
        else:
            p = torch.exp(s.float())
            total = p.sum(dim=-1)
            total = torch.where(total > 0, total, torch.ones_like(total))
            row_lse = torch.log(total)
            o[c] = torch.matmul(p.to(nomax).double(), vf[c]) / total[..., None].double()
        lse[c] = row_lse.double()
    return o.reshape(B, H, N, D), lse.reshape(B, H, N)


def mistakes(q, k, v, causal, sm_scale):
    D, N = q.shape[-1], q.shape[2]
    scale = 1.0 / math.sqrt(D) if sm_scale is None else sm_scale
    o, lse = golden(q, k, v, causal, sm_scale)
    yield ("lse_base2", "o is right, but lse is a base-2 logsumexp (m + log2(l), with the running max m kept in "
           "base 2 for exp2): every lse is log2(e) = 1.4427 times the natural one. Store "
           "(m + log2(l)) * ln(2)", (o, lse * LOG2E))
    s = torch.matmul(q, k.transpose(-1, -2)) * scale
    if causal:
        s = s.masked_fill(_causal_mask(N, q.device), float("-inf"))
    m = s.amax(dim=-1)
    mixed = m * LOG2E + torch.log(torch.exp(s - m[..., None]).sum(dim=-1))
    yield ("lse_mixed_bases", "o is right, but lse mixes bases: m + ln(l) with the running max m in base 2 (for "
           "exp2) and the sum l natural. Convert m to natural log first: lse = m * ln(2) + ln(l)", (o, mixed))
    # The softmax at the wrong scale (o and lse both follow it).
    tried = {scale}
    for used, why in (
        (1.0 / math.sqrt(D), f"1/sqrt(D) = {1 / math.sqrt(D):.4g}, ignoring the sm_scale argument ({sm_scale})"),
        (1.0, f"1 (no scale at all) instead of sm_scale = {scale:.4g}"),
        (scale * math.sqrt(D), f"sm_scale * sqrt(D) = {scale * math.sqrt(D):.4g}: off by sqrt(D) = "
                               f"{math.sqrt(D):.4g} (a scale divided out, or 1/sqrt(D) confused with sqrt(D))"),
        (scale / math.sqrt(D), f"sm_scale / sqrt(D) = {scale / math.sqrt(D):.4g}: the 1/sqrt(D) applied twice"),
        (scale * LOG2E, f"sm_scale * log2(e) = {scale * LOG2E:.4g} under a natural exp: log2(e) is folded in for "
                        "exp2, but the exponentials are taken with exp"),
        (scale * LN2, f"sm_scale * ln(2) = {scale * LN2:.4g}: exp2 of scores that were not multiplied by log2(e)"),
    ):
        if any(abs(used - t) <= 1e-9 * abs(t) for t in tried):
            continue
        tried.add(used)
        yield ("sm_scale", f"o and lse are what the softmax gives with the scores scaled by {why}. Scale the "
               f"scores by sm_scale (1/sqrt(D) when it is None) exactly once", _attend(q, k, v, causal, used))
    if causal and N > 0:
        # The causal mask keeps j < i instead of j <= i: the diagonal is lost, query 0 sees no key (0 / 0).
        strict = torch.matmul(q, k.transpose(-1, -2)) * scale
        strict = strict.masked_fill(torch.ones(N, N, dtype=torch.bool, device=q.device).triu(0), float("-inf"))
        p = torch.exp(strict - strict.amax(dim=-1, keepdim=True).nan_to_num(0.0, 0.0, 0.0))
        total = p.sum(dim=-1)
        yield ("causal_strict", "o is what attention gives when the causal mask keeps keys j < i instead of "
               "j <= i: every query loses its own key, and query 0 sees none at all (0 / 0 = NaN). Keep "
               "offs_m[:, None] >= offs_n[None, :]",
               (torch.matmul(p, v) / total[..., None], torch.log(total) + strict.amax(dim=-1)))
    # Keys past N loaded as zeros and not masked: score 0, value 0.
    if not causal:
        for block in (16, 32, 64, 128):
            pad = -N % block
            if pad == 0:
                continue
            zeros = q.new_zeros(*q.shape[:2], pad, D)
            yield ("masked_tail_other", f"o and lse are what attention gives when the {pad} keys past N = {N} (the "
                   f"last key block of {block}) count as keys with score 0 and value 0: their lanes are loaded "
                   "with other=0 but their scores are not masked. Set them to -inf "
                   "(tl.where(offs_n < N, s, float('-inf')))",
                   _attend(q, torch.cat([k, zeros], dim=2), torch.cat([v, zeros], dim=2), False, scale))
    top = float(s[torch.isfinite(s)].max()) if bool(torch.isfinite(s).any()) else 0.0
    for cast in dict.fromkeys((_dtype_of(v), torch.float32)):
        yield ("max_subtraction", "o and lse are what exp(s) / sum(exp(s)) gives without subtracting a running "
               f"maximum: exp overflows past s = 88 in float32 (past s = 11 once p is cast to float16 for the "
               f"product with v), and inf / inf = NaN. This case's scores reach {top:.4g}. Keep the running max "
               "m, take exp(s - m), and rescale the sum and the output whenever m grows",
               _attend(q, k, v, causal, scale, nomax=cast))


def _dtype_of(x):
    """The case's dtype, from the values (they were rounded to it)."""
    for dtype in (torch.float16, torch.bfloat16):
        if bool((x.to(dtype).double() == x).all()):
            return dtype
    return torch.float32


LOG2E, LN2 = 1.0 / math.log(2.0), math.log(2.0)
