# Bug: the preprocessing pass that computes D_i = rowsum(dO * O) is never
# launched: the delta buffer is allocated with zeros and used as it is, so
# dS = P * (dP - 0) = P * dP. dV does not use D_i and stays right; dQ and dK
# are wrong. The hint must name the missing D_i term.
# expect: without the D_i term
import math

import torch
import triton
import triton.language as tl


@triton.jit
def dkdv_kernel(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dk_ptr, dv_ptr, H, N, scale,
                sq_b, sq_h, sq_n, sq_d, sk_b, sk_h, sk_n, sk_d, sv_b, sv_h, sv_n, sv_d,
                sg_b, sg_h, sg_n, sg_d, sl_b, sl_h, sl_n,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, D: tl.constexpr, CAUSAL: tl.constexpr):
    pid = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    cols = tl.arange(0, D)
    keys = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    kmask = keys < N
    k = tl.load(k_ptr + b * sk_b + h * sk_h + keys[:, None] * sk_n + cols[None, :] * sk_d,
                mask=kmask[:, None], other=0.0)
    v = tl.load(v_ptr + b * sv_b + h * sv_h + keys[:, None] * sv_n + cols[None, :] * sv_d,
                mask=kmask[:, None], other=0.0)
    dk = tl.zeros((BLOCK_N, D), dtype=tl.float32)
    dv = tl.zeros((BLOCK_N, D), dtype=tl.float32)
    start = 0
    if CAUSAL:
        start = pid * BLOCK_N  # earlier queries cannot see these keys
    for m0 in range(start, N, BLOCK_M):
        rows = m0 + tl.arange(0, BLOCK_M)
        rmask = rows < N
        q = tl.load(q_ptr + b * sq_b + h * sq_h + rows[:, None] * sq_n + cols[None, :] * sq_d,
                    mask=rmask[:, None], other=0.0)
        do = tl.load(do_ptr + b * sg_b + h * sg_h + rows[:, None] * sg_n + cols[None, :] * sg_d,
                     mask=rmask[:, None], other=0.0)
        lse = tl.load(lse_ptr + b * sl_b + h * sl_h + rows * sl_n, mask=rmask, other=0.0)
        delta = tl.load(delta_ptr + bh * N + rows, mask=rmask, other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale
        p = tl.exp(s - lse[:, None])
        valid = rmask[:, None] & kmask[None, :]
        if CAUSAL:
            valid = valid & (rows[:, None] >= keys[None, :])
        p = tl.where(valid, p, 0.0)
        dv += tl.dot(tl.trans(p.to(do.dtype)), do)
        dp = tl.dot(do, tl.trans(v))
        ds = p * (dp - delta[:, None])
        dk += tl.dot(tl.trans(ds.to(q.dtype)), q)
    dk = dk * scale
    out = b * H * N * D + h * N * D + keys[:, None] * D + cols[None, :]
    tl.store(dk_ptr + out, dk.to(dk_ptr.dtype.element_ty), mask=kmask[:, None])
    tl.store(dv_ptr + out, dv.to(dv_ptr.dtype.element_ty), mask=kmask[:, None])


@triton.jit
def dq_kernel(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dq_ptr, H, N, scale,
              sq_b, sq_h, sq_n, sq_d, sk_b, sk_h, sk_n, sk_d, sv_b, sv_h, sv_n, sv_d,
              sg_b, sg_h, sg_n, sg_d, sl_b, sl_h, sl_n,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, D: tl.constexpr, CAUSAL: tl.constexpr):
    pid = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    cols = tl.arange(0, D)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    rmask = rows < N
    q = tl.load(q_ptr + b * sq_b + h * sq_h + rows[:, None] * sq_n + cols[None, :] * sq_d,
                mask=rmask[:, None], other=0.0)
    do = tl.load(do_ptr + b * sg_b + h * sg_h + rows[:, None] * sg_n + cols[None, :] * sg_d,
                 mask=rmask[:, None], other=0.0)
    lse = tl.load(lse_ptr + b * sl_b + h * sl_h + rows * sl_n, mask=rmask, other=0.0)
    delta = tl.load(delta_ptr + bh * N + rows, mask=rmask, other=0.0)
    dq = tl.zeros((BLOCK_M, D), dtype=tl.float32)
    end = N
    if CAUSAL:
        end = tl.minimum((pid + 1) * BLOCK_M, N)  # later keys are masked for every row here
    for n0 in range(0, end, BLOCK_N):
        keys = n0 + tl.arange(0, BLOCK_N)
        kmask = keys < N
        k = tl.load(k_ptr + b * sk_b + h * sk_h + keys[:, None] * sk_n + cols[None, :] * sk_d,
                    mask=kmask[:, None], other=0.0)
        v = tl.load(v_ptr + b * sv_b + h * sv_h + keys[:, None] * sv_n + cols[None, :] * sv_d,
                    mask=kmask[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale
        p = tl.exp(s - lse[:, None])
        valid = rmask[:, None] & kmask[None, :]
        if CAUSAL:
            valid = valid & (rows[:, None] >= keys[None, :])
        p = tl.where(valid, p, 0.0)
        dp = tl.dot(do, tl.trans(v))
        ds = p * (dp - delta[:, None])
        dq += tl.dot(ds.to(k.dtype), k)
    dq = dq * scale
    out = b * H * N * D + h * N * D + rows[:, None] * D + cols[None, :]
    tl.store(dq_ptr + out, dq.to(dq_ptr.dtype.element_ty), mask=rmask[:, None])


def flash_attention_backward(q, k, v, o, lse, do, causal, sm_scale):
    B, H, N, D = q.shape
    scale = 1.0 / math.sqrt(D) if sm_scale is None else sm_scale
    dq = torch.empty((B, H, N, D), dtype=q.dtype, device=q.device)
    dk = torch.empty((B, H, N, D), dtype=q.dtype, device=q.device)
    dv = torch.empty((B, H, N, D), dtype=q.dtype, device=q.device)
    delta = torch.zeros((B * H, N), dtype=torch.float32, device=q.device)  # filled by the preprocessing pass
    BLOCK = 32
    strides = (*q.stride(), *k.stride(), *v.stride(), *do.stride(), *lse.stride())
    dkdv_kernel[(triton.cdiv(N, BLOCK), B * H)](q, k, v, do, lse, delta, dk, dv, H, N, scale, *strides,
                                                BLOCK_M=BLOCK, BLOCK_N=BLOCK, D=D, CAUSAL=causal)
    dq_kernel[(triton.cdiv(N, BLOCK), B * H)](q, k, v, do, lse, delta, dq, H, N, scale, *strides,
                                              BLOCK_M=BLOCK, BLOCK_N=BLOCK, D=D, CAUSAL=causal)
    return dq, dk, dv
