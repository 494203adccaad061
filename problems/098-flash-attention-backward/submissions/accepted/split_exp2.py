# The split backward done in base 2: the scores are scaled by sm_scale * log2(e)
# and the natural-log lse is converted the same way (lse * log2(e)) before the
# subtraction, so exp2(S' - L') equals exp(S - L) and the fast exp2 is safe.
# D_i is computed by a preprocessing kernel; dK/dV use 64-key tiles against
# 16-query tiles, dQ the other way round; causal blocks past the diagonal are
# skipped by the loop bounds.
import math

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634


@triton.jit
def pre_kernel(O, DO, DELTA, H, N, sob, soh, son, sod, sgb, sgh, sgn, sgd,
               BM: tl.constexpr, HD: tl.constexpr):
    bh = tl.program_id(1).to(tl.int64)
    b = bh // H
    h = bh % H
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    d = tl.arange(0, HD)
    ok = m < N
    o = tl.load(O + b * sob + h * soh + m[:, None] * son + d[None, :] * sod, mask=ok[:, None], other=0.0)
    g = tl.load(DO + b * sgb + h * sgh + m[:, None] * sgn + d[None, :] * sgd, mask=ok[:, None], other=0.0)
    tl.store(DELTA + bh * N + m, tl.sum(o.to(tl.float32) * g.to(tl.float32), 1), mask=ok)


@triton.jit
def dkdv_kernel(Q, K, V, DO, LSE, DELTA, DK, DV, H, N, qk_scale, sm_scale,
                sqb, sqh, sqn, sqd, skb, skh, skn, skd, svb, svh, svn, svd,
                sgb, sgh, sgn, sgd, slb, slh, sln,
                BM: tl.constexpr, BN: tl.constexpr, HD: tl.constexpr, CAUSAL: tl.constexpr):
    bh = tl.program_id(1).to(tl.int64)
    b = bh // H
    h = bh % H
    n0 = tl.program_id(0) * BN
    n = n0 + tl.arange(0, BN)
    d = tl.arange(0, HD)
    nok = n < N
    k = tl.load(K + b * skb + h * skh + n[:, None] * skn + d[None, :] * skd, mask=nok[:, None], other=0.0)
    v = tl.load(V + b * svb + h * svh + n[:, None] * svn + d[None, :] * svd, mask=nok[:, None], other=0.0)
    dk = tl.zeros((BN, HD), tl.float32)
    dv = tl.zeros((BN, HD), tl.float32)
    lo = n0 if CAUSAL else 0
    for m0 in range(lo, N, BM):
        m = m0 + tl.arange(0, BM)
        mok = m < N
        qT = tl.load(Q + b * sqb + h * sqh + m[None, :] * sqn + d[:, None] * sqd, mask=mok[None, :], other=0.0)
        g = tl.load(DO + b * sgb + h * sgh + m[:, None] * sgn + d[None, :] * sgd, mask=mok[:, None], other=0.0)
        l2 = tl.load(LSE + b * slb + h * slh + m * sln, mask=mok, other=0.0) * 1.4426950408889634
        di = tl.load(DELTA + bh * N + m, mask=mok, other=0.0)
        pT = tl.exp2(tl.dot(k, qT) * qk_scale - l2[None, :])  # (BN, BM)
        keep = mok[None, :] & nok[:, None]
        if CAUSAL:
            keep = keep & (m[None, :] >= n[:, None])
        pT = tl.where(keep, pT, 0.0)
        dv += tl.dot(pT.to(g.dtype), g)
        dsT = pT * (tl.dot(v, tl.trans(g)) - di[None, :])
        dk += tl.dot(dsT.to(qT.dtype), tl.trans(qT))
    dk *= sm_scale
    tl.store(DK + (bh * N + n[:, None]) * HD + d[None, :], dk.to(DK.dtype.element_ty), mask=nok[:, None])
    tl.store(DV + (bh * N + n[:, None]) * HD + d[None, :], dv.to(DV.dtype.element_ty), mask=nok[:, None])


@triton.jit
def dq_kernel(Q, K, V, DO, LSE, DELTA, DQ, H, N, qk_scale, sm_scale,
              sqb, sqh, sqn, sqd, skb, skh, skn, skd, svb, svh, svn, svd,
              sgb, sgh, sgn, sgd, slb, slh, sln,
              BM: tl.constexpr, BN: tl.constexpr, HD: tl.constexpr, CAUSAL: tl.constexpr):
    bh = tl.program_id(1).to(tl.int64)
    b = bh // H
    h = bh % H
    m0 = tl.program_id(0) * BM
    m = m0 + tl.arange(0, BM)
    d = tl.arange(0, HD)
    mok = m < N
    q = tl.load(Q + b * sqb + h * sqh + m[:, None] * sqn + d[None, :] * sqd, mask=mok[:, None], other=0.0)
    g = tl.load(DO + b * sgb + h * sgh + m[:, None] * sgn + d[None, :] * sgd, mask=mok[:, None], other=0.0)
    l2 = tl.load(LSE + b * slb + h * slh + m * sln, mask=mok, other=0.0) * 1.4426950408889634
    di = tl.load(DELTA + bh * N + m, mask=mok, other=0.0)
    dq = tl.zeros((BM, HD), tl.float32)
    hi = tl.minimum(m0 + BM, N) if CAUSAL else N
    for n0 in range(0, hi, BN):
        n = n0 + tl.arange(0, BN)
        nok = n < N
        kT = tl.load(K + b * skb + h * skh + n[None, :] * skn + d[:, None] * skd, mask=nok[None, :], other=0.0)
        vT = tl.load(V + b * svb + h * svh + n[None, :] * svn + d[:, None] * svd, mask=nok[None, :], other=0.0)
        p = tl.exp2(tl.dot(q, kT) * qk_scale - l2[:, None])
        keep = mok[:, None] & nok[None, :]
        if CAUSAL:
            keep = keep & (m[:, None] >= n[None, :])
        p = tl.where(keep, p, 0.0)
        ds = p * (tl.dot(g, vT) - di[:, None])
        dq += tl.dot(ds.to(kT.dtype), tl.trans(kT))
    dq *= sm_scale
    tl.store(DQ + (bh * N + m[:, None]) * HD + d[None, :], dq.to(DQ.dtype.element_ty), mask=mok[:, None])


def flash_attention_backward(q, k, v, o, lse, do, causal, sm_scale):
    B, H, N, D = q.shape
    sm_scale = 1.0 / math.sqrt(D) if sm_scale is None else float(sm_scale)
    qk_scale = sm_scale * LOG2E
    dq = torch.empty((B, H, N, D), dtype=q.dtype, device=q.device)
    dk = torch.empty_like(dq)
    dv = torch.empty_like(dq)
    delta = torch.empty((B, H, N), dtype=torch.float32, device=q.device)
    pre_kernel[(triton.cdiv(N, 32), B * H)](o, do, delta, H, N, *o.stride(), *do.stride(), BM=32, HD=D)
    args = (q, k, v, do, lse, delta)
    strides = (*q.stride(), *k.stride(), *v.stride(), *do.stride(), *lse.stride())
    causal = bool(causal)
    dkdv_kernel[(triton.cdiv(N, 64), B * H)](*args, dk, dv, H, N, qk_scale, sm_scale, *strides,
                                            BM=16, BN=64, HD=D, CAUSAL=causal)
    dq_kernel[(triton.cdiv(N, 64), B * H)](*args, dq, H, N, qk_scale, sm_scale, *strides,
                                          BM=64, BN=16, HD=D, CAUSAL=causal)
    return dq, dk, dv
