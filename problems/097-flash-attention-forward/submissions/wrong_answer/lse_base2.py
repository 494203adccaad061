# Bug: the online softmax runs in base 2 (exp2, log2(e) folded into the scale),
# and the lse is stored as m + log2(l) without converting back to the natural
# log. o is right; every lse is off by a factor of log2(e).
# expect: lse:
import math

import torch
import triton
import triton.language as tl


@triton.jit
def attn_fwd(Q, K, V, O, L, qk_scale, N, H,
             sqb, sqh, sqn, sqd, skb, skh, skn, skd, svb, svh, svn, svd, sob, soh, son, sod,
             D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // H).to(tl.int64)
    h = (bh % H).to(tl.int64)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + b * sqb + h * sqh + offs_m[:, None] * sqn + offs_d[None, :] * sqd,
                mask=offs_m[:, None] < N, other=0.0)
    m_i = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, D), tl.float32)
    if CAUSAL:
        hi = tl.minimum((start_m + 1) * BLOCK_M, N)
    else:
        hi = N
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        n_ok = offs_n < N
        k = tl.load(K + b * skb + h * skh + offs_n[None, :] * skn + offs_d[:, None] * skd,
                    mask=n_ok[None, :], other=0.0)
        v = tl.load(V + b * svb + h * svh + offs_n[:, None] * svn + offs_d[None, :] * svd,
                    mask=n_ok[:, None], other=0.0)
        s = tl.dot(q, k) * qk_scale
        keep = n_ok[None, :]
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        s = tl.where(keep, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    l_safe = tl.where(l_i > 0.0, l_i, 1.0)
    out = acc / l_safe[:, None]
    lse = m_i + tl.log2(l_safe)
    tl.store(L + bh * N + offs_m, lse, mask=offs_m < N)
    tl.store(O + b * sob + h * soh + offs_m[:, None] * son + offs_d[None, :] * sod,
             out.to(O.dtype.element_ty), mask=offs_m[:, None] < N)


def flash_attention_forward(q, k, v, causal, sm_scale):
    B, H, N, D = q.shape
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(D)
    o = torch.empty((B, H, N, D), dtype=q.dtype, device=q.device)
    lse = torch.empty((B, H, N), dtype=torch.float32, device=q.device)
    BLOCK_M, BLOCK_N = 64, 32
    attn_fwd[(triton.cdiv(N, BLOCK_M), B * H)](
        q, k, v, o, lse, sm_scale * 1.4426950408889634, N, H,
        *q.stride(), *k.stride(), *v.stride(), *o.stride(),
        D=D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, CAUSAL=causal, num_warps=4)
    return o, lse
