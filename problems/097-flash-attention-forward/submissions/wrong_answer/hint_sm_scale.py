# Bug: the host code folds 1/sqrt(D) into the scale on top of sm_scale
# (scale = sm_scale / sqrt(D), reading sm_scale as a temperature), so the
# scores are scaled by 1/sqrt(D) twice when sm_scale is None, and by
# sm_scale / sqrt(D) otherwise: the softmax runs too flat. The hint must name
# the scale and the factor sqrt(D) it is off by.
# expect: the 1/sqrt(D) applied twice
import math

import torch
import triton
import triton.language as tl


@triton.jit
def scores(q, k_ptrs, offs_m, offs_n, N, scale, CAUSAL: tl.constexpr):
    k = tl.load(k_ptrs, mask=offs_n[:, None] < N, other=0.0)  # (BLOCK_N, D)
    s = tl.dot(q, tl.trans(k)).to(tl.float32) * scale
    keep = offs_n[None, :] < N
    if CAUSAL:
        keep = keep & (offs_n[None, :] <= offs_m[:, None])
    return tl.where(keep, s, float("-inf"))


@triton.jit
def two_pass_kernel(Q, K, V, O, L, scale, N, H,
                    sqb, sqh, sqn, sqd, skb, skh, skn, skd, svb, svh, svn, svd,
                    D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    bh = tl.program_id(0)
    start_m = tl.program_id(1)
    b = (bh // H).to(tl.int64)
    h = (bh % H).to(tl.int64)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, D)
    offs_b = tl.arange(0, BLOCK_N)
    row_ok = offs_m < N
    q = tl.load(Q + b * sqb + h * sqh + offs_m[:, None] * sqn + offs_d[None, :] * sqd,
                mask=row_ok[:, None], other=0.0)
    k_base = K + b * skb + h * skh
    v_base = V + b * svb + h * svh
    if CAUSAL:
        hi = tl.minimum(start_m * BLOCK_M + BLOCK_M, N)
    else:
        hi = N

    # Pass 1: row max and row sum of exp.
    m = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    l = tl.zeros((BLOCK_M,), tl.float32)
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + offs_b
        s = scores(q, k_base + offs_n[:, None] * skn + offs_d[None, :] * skd, offs_m, offs_n, N, scale, CAUSAL)
        m_new = tl.maximum(m, tl.max(s, axis=1))
        l = l * tl.exp(m - m_new) + tl.sum(tl.exp(s - m_new[:, None]), axis=1)
        m = m_new
    lse = m + tl.log(tl.where(row_ok, l, 1.0))

    # Pass 2: the exact probabilities, accumulated against V.
    acc = tl.zeros((BLOCK_M, D), tl.float32)
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + offs_b
        s = scores(q, k_base + offs_n[:, None] * skn + offs_d[None, :] * skd, offs_m, offs_n, N, scale, CAUSAL)
        p = tl.exp(s - lse[:, None])
        v = tl.load(v_base + offs_n[:, None] * svn + offs_d[None, :] * svd, mask=offs_n[:, None] < N, other=0.0)
        acc += tl.dot(p.to(v.dtype), v)

    tl.store(L + bh * N + offs_m, lse, mask=row_ok)
    o_ptrs = O + bh * N * D + offs_m[:, None] * D + offs_d[None, :]  # O is contiguous
    tl.store(o_ptrs, acc.to(O.dtype.element_ty), mask=row_ok[:, None])


def flash_attention_forward(q, k, v, causal, sm_scale):
    B, H, N, D = q.shape
    scale = (1.0 / math.sqrt(D) if sm_scale is None else float(sm_scale)) / math.sqrt(D)
    o = torch.empty((B, H, N, D), dtype=q.dtype, device=q.device)
    lse = torch.empty((B, H, N), dtype=torch.float32, device=q.device)
    BLOCK_M, BLOCK_N = 32, 16
    grid = (B * H, triton.cdiv(N, BLOCK_M))
    two_pass_kernel[grid](q, k, v, o, lse, scale, N, H, *q.stride(), *k.stride(), *v.stride(),
                          D=D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, CAUSAL=causal)
    return o, lse
