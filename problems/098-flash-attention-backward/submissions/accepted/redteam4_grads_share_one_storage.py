"""Red team 4: the reference's kernels with dq, dk and dv returned as three views of one allocation: outputs that
share a storage, which the record, the replay's per-output writers and the not-written-here check must keep apart.
They do: AC, every case proven by its replay."""
import math

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634  # 1 / ln 2


@triton.jit
def _bwd_preprocess(o_ptr, do_ptr, lse_ptr, delta_ptr, lse2_ptr, H, N,
                    s_ob, s_oh, s_on, s_od, s_gb, s_gh, s_gn, s_gd, s_lb, s_lh, s_ln,
                    BLOCK_M: tl.constexpr, HEAD_DIM: tl.constexpr):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    b = bh // H
    h = bh % H
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    mask = offs_m < N
    o = tl.load(o_ptr + b * s_ob + h * s_oh + offs_m[:, None] * s_on + offs_d[None, :] * s_od,
                mask=mask[:, None], other=0.0).to(tl.float32)
    do = tl.load(do_ptr + b * s_gb + h * s_gh + offs_m[:, None] * s_gn + offs_d[None, :] * s_gd,
                 mask=mask[:, None], other=0.0).to(tl.float32)
    lse = tl.load(lse_ptr + b * s_lb + h * s_lh + offs_m * s_ln, mask=mask, other=0.0)
    tl.store(delta_ptr + bh * N + offs_m, tl.sum(o * do, axis=1), mask=mask)
    tl.store(lse2_ptr + bh * N + offs_m, lse * 1.4426950408889634, mask=mask)


@triton.jit
def _dkdv_stage(dk, dv, k, v, q_ptrs, do_ptrs, lse2_ptr, delta_ptr, s_qn, s_gn,
                offs_n, lo, hi, N, qk_scale,
                BLOCK_M: tl.constexpr, DIAG: tl.constexpr, BOUNDS: tl.constexpr, DOT_PREC: tl.constexpr):
    """Query blocks [lo, hi) against this program's keys; q_ptrs/do_ptrs point at query 0's tile."""
    offs_m = lo + tl.arange(0, BLOCK_M)
    q_ptrs += lo * s_qn
    do_ptrs += lo * s_gn
    for start_m in range(lo, hi, BLOCK_M):
        if BOUNDS:
            m_ok = offs_m < N
            qT = tl.load(q_ptrs, mask=m_ok[None, :], other=0.0)
            do = tl.load(do_ptrs, mask=m_ok[:, None], other=0.0)
            lse2 = tl.load(lse2_ptr + offs_m, mask=m_ok, other=0.0)
            delta = tl.load(delta_ptr + offs_m, mask=m_ok, other=0.0)
        else:
            qT = tl.load(q_ptrs)
            do = tl.load(do_ptrs)
            lse2 = tl.load(lse2_ptr + offs_m)
            delta = tl.load(delta_ptr + offs_m)
        # P^T (BLOCK_N x BLOCK_M) = exp2(scale * log2e * K Q^T - lse2): one FMA and one exp2 a score.
        pT = tl.math.exp2(tl.dot(k, qT, input_precision=DOT_PREC) * qk_scale - lse2[None, :])
        if DIAG:
            pT = tl.where(offs_m[None, :] >= offs_n[:, None], pT, 0.0)
        dv = tl.dot(pT.to(do.dtype), do, dv, input_precision=DOT_PREC)
        dpT = tl.dot(v, tl.trans(do), input_precision=DOT_PREC)
        dsT = pT * (dpT - delta[None, :])
        dk = tl.dot(dsT.to(qT.dtype), tl.trans(qT), dk, input_precision=DOT_PREC)
        offs_m += BLOCK_M
        q_ptrs += BLOCK_M * s_qn
        do_ptrs += BLOCK_M * s_gn
    return dk, dv


@triton.jit
def _bwd_dkdv(q_ptr, k_ptr, v_ptr, do_ptr, lse2_ptr, delta_ptr, dk_ptr, dv_ptr, H, N, qk_scale, sm_scale,
              s_qb, s_qh, s_qn, s_qd, s_kb, s_kh, s_kn, s_kd, s_vb, s_vh, s_vn, s_vd,
              s_gb, s_gh, s_gn, s_gd,
              s_dkb, s_dkh, s_dkn, s_dkd, s_dvb, s_dvh, s_dvn, s_dvd,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr,
              EVEN: tl.constexpr, DOT_PREC: tl.constexpr):
    # The diagonal of a key block is whole query blocks.
    tl.static_assert(BLOCK_N % BLOCK_M == 0)
    pid_n = tl.program_id(0)  # causal: block 0 sees every query block, so the heaviest start first
    bh = tl.program_id(1).to(tl.int64)
    b = bh // H
    h = bh % H
    start_n = pid_n * BLOCK_N
    offs_n = start_n + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    offs_m = tl.arange(0, BLOCK_M)
    k_ptrs = k_ptr + b * s_kb + h * s_kh + offs_n[:, None] * s_kn + offs_d[None, :] * s_kd
    v_ptrs = v_ptr + b * s_vb + h * s_vh + offs_n[:, None] * s_vn + offs_d[None, :] * s_vd
    if EVEN:
        k = tl.load(k_ptrs)
        v = tl.load(v_ptrs)
    else:
        k = tl.load(k_ptrs, mask=offs_n[:, None] < N, other=0.0)
        v = tl.load(v_ptrs, mask=offs_n[:, None] < N, other=0.0)
    # Q is read as a (HEAD_DIM, BLOCK_M) tile, i.e. Q^T, for K Q^T.
    q_ptrs = q_ptr + b * s_qb + h * s_qh + offs_m[None, :] * s_qn + offs_d[:, None] * s_qd
    do_ptrs = do_ptr + b * s_gb + h * s_gh + offs_m[:, None] * s_gn + offs_d[None, :] * s_gd
    lse2_base = lse2_ptr + bh * N
    delta_base = delta_ptr + bh * N
    dk = tl.zeros((BLOCK_N, HEAD_DIM), dtype=tl.float32)
    dv = tl.zeros((BLOCK_N, HEAD_DIM), dtype=tl.float32)

    if CAUSAL:
        # Query blocks [start_n, start_n + BLOCK_N) straddle the diagonal; the
        # ones before it see none of these keys and are skipped.
        dk, dv = _dkdv_stage(dk, dv, k, v, q_ptrs, do_ptrs, lse2_base, delta_base, s_qn, s_gn,
                             offs_n, start_n, tl.minimum(start_n + BLOCK_N, N), N, qk_scale,
                             BLOCK_M, True, not EVEN, DOT_PREC)
        lo = start_n + BLOCK_N
    else:
        lo = 0
    # Whole query blocks that see all of these keys, then the ragged tail.
    full_hi = (N // BLOCK_M) * BLOCK_M
    dk, dv = _dkdv_stage(dk, dv, k, v, q_ptrs, do_ptrs, lse2_base, delta_base, s_qn, s_gn,
                         offs_n, lo, full_hi, N, qk_scale, BLOCK_M, False, False, DOT_PREC)
    if not EVEN:
        dk, dv = _dkdv_stage(dk, dv, k, v, q_ptrs, do_ptrs, lse2_base, delta_base, s_qn, s_gn,
                             offs_n, tl.maximum(lo, full_hi), N, N, qk_scale, BLOCK_M, False, True, DOT_PREC)

    dk = dk * sm_scale
    dk_ptrs = dk_ptr + b * s_dkb + h * s_dkh + offs_n[:, None] * s_dkn + offs_d[None, :] * s_dkd
    dv_ptrs = dv_ptr + b * s_dvb + h * s_dvh + offs_n[:, None] * s_dvn + offs_d[None, :] * s_dvd
    if EVEN:
        tl.store(dk_ptrs, dk.to(dk_ptr.dtype.element_ty))
        tl.store(dv_ptrs, dv.to(dv_ptr.dtype.element_ty))
    else:
        tl.store(dk_ptrs, dk.to(dk_ptr.dtype.element_ty), mask=offs_n[:, None] < N)
        tl.store(dv_ptrs, dv.to(dv_ptr.dtype.element_ty), mask=offs_n[:, None] < N)


@triton.jit
def _dq_stage(dq, q, do, lse2, delta, k_ptrs, v_ptrs, s_kn, s_vn,
              offs_m, lo, hi, N, qk_scale,
              BLOCK_N: tl.constexpr, DIAG: tl.constexpr, BOUNDS: tl.constexpr, DOT_PREC: tl.constexpr):
    """Key blocks [lo, hi) against this program's queries; k_ptrs/v_ptrs point at key 0's tile."""
    offs_n = lo + tl.arange(0, BLOCK_N)
    k_ptrs += lo * s_kn
    v_ptrs += lo * s_vn
    for start_n in range(lo, hi, BLOCK_N):
        if BOUNDS:
            kT = tl.load(k_ptrs, mask=offs_n[None, :] < N, other=0.0)
            vT = tl.load(v_ptrs, mask=offs_n[None, :] < N, other=0.0)
        else:
            kT = tl.load(k_ptrs)
            vT = tl.load(v_ptrs)
        p = tl.math.exp2(tl.dot(q, kT, input_precision=DOT_PREC) * qk_scale - lse2[:, None])
        if DIAG:
            p = tl.where(offs_m[:, None] >= offs_n[None, :], p, 0.0)
        if BOUNDS and not DIAG:
            # Keys past N were read as zeros: their score 0 gives exp2(-lse2),
            # which overflows when every score of the row is below -88, and
            # inf * 0 = NaN in dS. (On the diagonal they are masked already:
            # a key past N lies above the diagonal of every row inside N.)
            p = tl.where(offs_n[None, :] < N, p, 0.0)
        dp = tl.dot(do, vT, input_precision=DOT_PREC)
        ds = p * (dp - delta[:, None])
        dq = tl.dot(ds.to(kT.dtype), tl.trans(kT), dq, input_precision=DOT_PREC)
        offs_n += BLOCK_N
        k_ptrs += BLOCK_N * s_kn
        v_ptrs += BLOCK_N * s_vn
    return dq


@triton.jit
def _bwd_dq(q_ptr, k_ptr, v_ptr, do_ptr, lse2_ptr, delta_ptr, dq_ptr, H, N, qk_scale, sm_scale, num_m_blocks,
            s_qb, s_qh, s_qn, s_qd, s_kb, s_kh, s_kn, s_kd, s_vb, s_vh, s_vn, s_vd,
            s_gb, s_gh, s_gn, s_gd, s_dqb, s_dqh, s_dqn, s_dqd,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr,
            EVEN: tl.constexpr, DOT_PREC: tl.constexpr):
    # The diagonal of a query block is whole key blocks.
    tl.static_assert(BLOCK_M % BLOCK_N == 0)
    pid_m = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    b = bh // H
    h = bh % H
    if CAUSAL:
        # The last query block sees every key block: start the longest first.
        start_m = (num_m_blocks - 1 - pid_m) * BLOCK_M
    else:
        start_m = pid_m * BLOCK_M
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    offs_n = tl.arange(0, BLOCK_N)
    q_ptrs = q_ptr + b * s_qb + h * s_qh + offs_m[:, None] * s_qn + offs_d[None, :] * s_qd
    do_ptrs = do_ptr + b * s_gb + h * s_gh + offs_m[:, None] * s_gn + offs_d[None, :] * s_gd
    if EVEN:
        q = tl.load(q_ptrs)
        do = tl.load(do_ptrs)
        lse2 = tl.load(lse2_ptr + bh * N + offs_m)
        delta = tl.load(delta_ptr + bh * N + offs_m)
    else:
        m_ok = offs_m < N
        q = tl.load(q_ptrs, mask=m_ok[:, None], other=0.0)
        do = tl.load(do_ptrs, mask=m_ok[:, None], other=0.0)
        lse2 = tl.load(lse2_ptr + bh * N + offs_m, mask=m_ok, other=0.0)
        delta = tl.load(delta_ptr + bh * N + offs_m, mask=m_ok, other=0.0)
    # K and V are read as (HEAD_DIM, BLOCK_N) tiles, i.e. K^T and V^T.
    k_ptrs = k_ptr + b * s_kb + h * s_kh + offs_n[None, :] * s_kn + offs_d[:, None] * s_kd
    v_ptrs = v_ptr + b * s_vb + h * s_vh + offs_n[None, :] * s_vn + offs_d[:, None] * s_vd
    dq = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)

    if CAUSAL:
        # Keys before start_m are visible to every row of the block (and inside
        # N); those in [start_m, start_m + BLOCK_M) straddle the diagonal.
        dq = _dq_stage(dq, q, do, lse2, delta, k_ptrs, v_ptrs, s_kn, s_vn,
                       offs_m, 0, start_m, N, qk_scale, BLOCK_N, False, False, DOT_PREC)
        dq = _dq_stage(dq, q, do, lse2, delta, k_ptrs, v_ptrs, s_kn, s_vn,
                       offs_m, start_m, tl.minimum(start_m + BLOCK_M, N), N, qk_scale,
                       BLOCK_N, True, not EVEN, DOT_PREC)
    else:
        full_hi = (N // BLOCK_N) * BLOCK_N
        dq = _dq_stage(dq, q, do, lse2, delta, k_ptrs, v_ptrs, s_kn, s_vn,
                       offs_m, 0, full_hi, N, qk_scale, BLOCK_N, False, False, DOT_PREC)
        if not EVEN:
            dq = _dq_stage(dq, q, do, lse2, delta, k_ptrs, v_ptrs, s_kn, s_vn,
                           offs_m, full_hi, N, N, qk_scale, BLOCK_N, False, True, DOT_PREC)

    dq = dq * sm_scale
    dq_ptrs = dq_ptr + b * s_dqb + h * s_dqh + offs_m[:, None] * s_dqn + offs_d[None, :] * s_dqd
    if EVEN:
        tl.store(dq_ptrs, dq.to(dq_ptr.dtype.element_ty))
    else:
        tl.store(dq_ptrs, dq.to(dq_ptr.dtype.element_ty), mask=offs_m[:, None] < N)


# Per head dim, for an H200 and 16-bit inputs:
# (BLOCK_M1, BLOCK_N1, num_warps1, num_stages1) for the dK/dV kernel (BLOCK_N1 keys
# per program, BLOCK_M1 queries per step) and (BLOCK_M2, BLOCK_N2, num_warps2,
# num_stages2) for the dQ kernel (BLOCK_M2 queries per program, BLOCK_N2 keys
# per step). Each kernel holds two (block x D) float32 accumulators (dK, dV)
# or one (dQ) in registers, which bounds the tiles at D = 128.
CONFIGS = {
    16: ((32, 64, 4, 3), (64, 32, 4, 3)),
    32: ((32, 64, 4, 3), (64, 32, 4, 3)),
    64: ((64, 64, 4, 3), (128, 64, 8, 3)),  # H200 sweep (tests/bench/FA_NOTES.md): 0.80x SDPA full, 0.81x causal
    128: ((64, 128, 8, 3), (128, 64, 8, 3)),  # about 0.73x full, 0.75x causal: the best pair of the sweep
}
# Few heads or short sequences: smaller blocks, more programs.
SMALL_GRID = ((32, 64, 4, 3), (64, 32, 4, 3))
# float32 inputs on a GPU: full-precision dots on CUDA cores.
FLOAT32 = ((16, 32, 4, 2), (32, 16, 4, 2))
# Triton's interpreter (CPU tensors): each tl operation is one NumPy call on a
# whole tile, and the time goes to the calls, not the arithmetic. The biggest
# tiles are the fastest: 3-4x FLOAT32's on the test groups' shapes (n <= 200).
INTERPRETER = ((64, 128, 4, 1), (128, 64, 4, 1))
NUM_SMS = 132


def _config(B, H, N, D, dtype, device_type="cuda"):
    if device_type == "cpu":
        return INTERPRETER
    if dtype == torch.float32:
        return FLOAT32
    if triton.cdiv(N, 128) * B * H < NUM_SMS:
        return SMALL_GRID
    return CONFIGS[D]


def _launch(q, k, v, o, lse, do, causal, sm_scale, dkdv_cfg, dq_cfg):
    """The backward with explicit tuning knobs (tests/bench/fa_tune.py sweeps them).

    dkdv_cfg = (BLOCK_M1, BLOCK_N1, num_warps, num_stages), dq_cfg = (BLOCK_M2,
    BLOCK_N2, num_warps, num_stages). Returns (dq, dk, dv, [compiled kernels]).
    """
    B, H, N, D = q.shape
    scale = 1.0 / math.sqrt(D) if sm_scale is None else float(sm_scale)
    grads = torch.empty((3, B, H, N, D), dtype=q.dtype, device=q.device)  # one block of memory for all three
    dq, dk, dv = grads[0], grads[1], grads[2]
    delta = torch.empty((B * H, N), dtype=torch.float32, device=q.device)
    lse2 = torch.empty((B * H, N), dtype=torch.float32, device=q.device)
    # float32 inputs: tl.dot would round them to TF32 on the GPU by default.
    prec = "ieee" if q.dtype == torch.float32 else "tf32"
    bm1, bn1, w1, s1 = dkdv_cfg
    bm2, bn2, w2, s2 = dq_cfg

    # 64 rows a program on a GPU; in the interpreter a program's cost is its operations, not its rows.
    bm0 = 64 if q.device.type != "cpu" else 256
    pre = _bwd_preprocess[(triton.cdiv(N, bm0), B * H)](
        o, do, lse, delta, lse2, H, N, *o.stride(), *do.stride(), *lse.stride(), BLOCK_M=bm0, HEAD_DIM=D)
    strides = (*q.stride(), *k.stride(), *v.stride(), *do.stride())
    kv = _bwd_dkdv[(triton.cdiv(N, bn1), B * H)](
        q, k, v, do, lse2, delta, dk, dv, H, N, scale * LOG2E, scale, *strides, *dk.stride(), *dv.stride(),
        BLOCK_M=bm1, BLOCK_N=bn1, HEAD_DIM=D, CAUSAL=bool(causal), EVEN=N % bn1 == 0, DOT_PREC=prec,
        num_warps=w1, num_stages=s1)
    num_m_blocks = triton.cdiv(N, bm2)
    qk = _bwd_dq[(num_m_blocks, B * H)](
        q, k, v, do, lse2, delta, dq, H, N, scale * LOG2E, scale, num_m_blocks, *strides, *dq.stride(),
        BLOCK_M=bm2, BLOCK_N=bn2, HEAD_DIM=D, CAUSAL=bool(causal), EVEN=N % bm2 == 0, DOT_PREC=prec,
        num_warps=w2, num_stages=s2)
    return dq, dk, dv, [pre, kv, qk]


def flash_attention_backward(q, k, v, o, lse, do, causal, sm_scale):
    B, H, N, D = q.shape
    dkdv_cfg, dq_cfg = _config(B, H, N, D, q.dtype, q.device.type)
    dq, dk, dv, _ = _launch(q, k, v, o, lse, do, causal, sm_scale, dkdv_cfg, dq_cfg)
    return dq, dk, dv
