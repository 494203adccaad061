# K is loaded as a (BLOCK_N, HEAD_DIM) tile, like q, and multiplied as
# tl.dot(q, k): the inner dimensions (HEAD_DIM vs BLOCK_N) do not match, so
# Triton refuses the kernel. q @ k^T needs k as (HEAD_DIM, BLOCK_N) (or tl.trans(k)).
# expect: Triton could not compile
import math

import torch
import triton
import triton.language as tl


@triton.jit
def attn_fwd(Q, K, V, O, L, qk_scale, N, H,
             sqb, sqh, sqn, sqd, skb, skh, skn, skd, svb, svh, svn, svd,
             D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + b * sqb + h * sqh + offs_m[:, None] * sqn + offs_d[None, :] * sqd,
                mask=offs_m[:, None] < N, other=0.0)
    m_i = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, D), tl.float32)
    for start_n in range(0, N, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k = tl.load(K + b * skb + h * skh + offs_n[:, None] * skn + offs_d[None, :] * skd,
                    mask=offs_n[:, None] < N, other=0.0)
        v = tl.load(V + b * svb + h * svh + offs_n[:, None] * svn + offs_d[None, :] * svd,
                    mask=offs_n[:, None] < N, other=0.0)
        s = tl.dot(q, k) * qk_scale
        keep = offs_n[None, :] < N
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        s = tl.where(keep, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    row_ok = offs_m < N
    l_safe = tl.where(row_ok, l_i, 1.0)
    tl.store(L + bh * N + offs_m, (m_i + tl.log2(l_safe)) * 0.6931471805599453, mask=row_ok)
    tl.store(O + bh * N * D + offs_m[:, None] * D + offs_d[None, :],
             (acc / l_safe[:, None]).to(O.dtype.element_ty), mask=row_ok[:, None])


def flash_attention_forward(q, k, v, causal, sm_scale):
    B, H, N, D = q.shape
    scale = 1.0 / math.sqrt(D) if sm_scale is None else sm_scale
    o = torch.empty((B, H, N, D), dtype=q.dtype, device=q.device)
    lse = torch.empty((B, H, N), dtype=torch.float32, device=q.device)
    attn_fwd[(triton.cdiv(N, 64), B * H)](q, k, v, o, lse, scale * 1.4426950408889634, N, H,
                                          *q.stride(), *k.stride(), *v.stride(),
                                          D=D, BLOCK_M=64, BLOCK_N=32, CAUSAL=causal)
    return o, lse
