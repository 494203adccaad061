"""Red team 4: honest kernels (the reference's), (o, lse) returned as a namedtuple: a tuple to Python, one object of
another type to the worker's description and to the record (type(result) is tuple fails there), so a replay of
it would see no outputs. Stopped by: the output rule, before any replay: WA (it must return a tuple)."""
# expect: must return a tuple (o, lse)
import math

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634  # 1 / ln 2
LN2 = 0.6931471805599453


@triton.jit
def _attn_tile(acc, l_i, m_i, q, k, v, offs_m, offs_n, N, qk_scale,
               DIAG: tl.constexpr, BOUNDS: tl.constexpr, LAZY: tl.constexpr, DOT_PREC: tl.constexpr):
    """One K/V tile of the online softmax: returns the updated (acc, l, m).

    m is kept in log2 units (scores times qk_scale = scale * log2 e), so the
    exponentials are exp2 and the final lse is (m + log2 l) * ln 2.
    """
    qk = tl.dot(q, k, input_precision=DOT_PREC)  # raw scores q . k, float32
    if DIAG or BOUNDS:
        # Masked keys get -inf before the max. Every query row sees at least
        # one key in the first tile it processes (key 0, or its own diagonal
        # key), so m is finite from then on and no exp2 sees (-inf) - (-inf).
        keep = offs_n[None, :] < N
        if DIAG:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        s = tl.where(keep, qk * qk_scale, float("-inf"))
        m_tile = tl.max(s, 1)
    else:
        # The scale is positive, so max(qk) * scale = max(qk * scale): one
        # multiply per row instead of one per score.
        m_tile = tl.max(qk, 1) * qk_scale
    m_new = tl.maximum(m_i, m_tile)

    # The running max only serves to keep exp2 from overflowing; the result
    # is exact for any reference point, as long as l and acc use the same
    # one. With LAZY the reference is moved (and acc, l rescaled) only when
    # some row's max grew by more than 8, i.e. p may reach 2^8 = 256, far
    # from float16's or float32's range limits. On ordinary data that happens
    # in the first tile or two; the D multiplies per row of the rescale are
    # then skipped for the rest of the loop. (The first tile always
    # rescales: m_i = -inf gives an infinite growth.)
    if LAZY:
        if tl.max(m_new - m_i, 0) > 8.0:
            alpha = tl.math.exp2(m_i - m_new)
            acc = acc * alpha[:, None]
            l_i = l_i * alpha
            m_i = m_new
    else:
        alpha = tl.math.exp2(m_i - m_new)
        acc = acc * alpha[:, None]
        l_i = l_i * alpha
        m_i = m_new

    if DIAG or BOUNDS:
        p = tl.math.exp2(s - m_i[:, None])
    else:
        p = tl.math.exp2(qk * qk_scale - m_i[:, None])  # one FMA + one exp2 per score
    l_i = l_i + tl.sum(p, 1)
    # P is rounded to the input dtype for the tensor cores; acc stays float32.
    acc = tl.dot(p.to(v.dtype), v, acc, input_precision=DOT_PREC)
    return acc, l_i, m_i


@triton.jit
def _attn_stage(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn,
                offs_m, lo, hi, N, qk_scale,
                BLOCK_N: tl.constexpr, DIAG: tl.constexpr, BOUNDS: tl.constexpr,
                LAZY: tl.constexpr, DOT_PREC: tl.constexpr):
    """Key tiles [lo, hi) in steps of BLOCK_N; k_ptrs/v_ptrs point at key 0's tile."""
    offs_n = lo + tl.arange(0, BLOCK_N)
    k_ptrs += lo * stride_kn
    v_ptrs += lo * stride_vn
    for start_n in range(lo, hi, BLOCK_N):
        if BOUNDS:
            # The ragged tail: keys past N read as zero (never from memory).
            k = tl.load(k_ptrs, mask=offs_n[None, :] < N, other=0.0)
            v = tl.load(v_ptrs, mask=offs_n[:, None] < N, other=0.0)
        else:
            k = tl.load(k_ptrs)
            v = tl.load(v_ptrs)
        acc, l_i, m_i = _attn_tile(acc, l_i, m_i, q, k, v, offs_m, offs_n, N, qk_scale,
                                   DIAG, BOUNDS, LAZY, DOT_PREC)
        offs_n += BLOCK_N
        k_ptrs += BLOCK_N * stride_kn
        v_ptrs += BLOCK_N * stride_vn
    return acc, l_i, m_i


@triton.jit
def _flash_fwd_kernel(
    Q, K, V, O, LSE,
    qk_scale, N, H, num_m_blocks,
    stride_qb, stride_qh, stride_qn, stride_qd,
    stride_kb, stride_kh, stride_kn, stride_kd,
    stride_vb, stride_vh, stride_vn, stride_vd,
    stride_ob, stride_oh, stride_on, stride_od,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
    EVEN: tl.constexpr, LAZY: tl.constexpr, DOT_PREC: tl.constexpr,
):
    # The diagonal split below needs the query block to be whole key tiles.
    tl.static_assert(BLOCK_M % BLOCK_N == 0)
    pid_m = tl.program_id(0)
    off_bh = tl.program_id(1)
    if CAUSAL:
        # Query block i sees i + 1 key blocks: start the longest ones first so
        # that the short ones fill the gaps at the end of the launch.
        start_m = (num_m_blocks - 1 - pid_m) * BLOCK_M
    else:
        start_m = pid_m * BLOCK_M
    # Consecutive programs are blocks of the same head: they read the same
    # K and V, which the L2 cache then serves to all but the first.
    off_b = (off_bh // H).to(tl.int64)
    off_h = (off_bh % H).to(tl.int64)

    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    offs_n = tl.arange(0, BLOCK_N)
    q_ptrs = Q + off_b * stride_qb + off_h * stride_qh + offs_m[:, None] * stride_qn + offs_d[None, :] * stride_qd
    # K is read as a (HEAD_DIM, BLOCK_N) tile, i.e. K^T, so q @ k needs no transpose.
    k_ptrs = K + off_b * stride_kb + off_h * stride_kh + offs_n[None, :] * stride_kn + offs_d[:, None] * stride_kd
    v_ptrs = V + off_b * stride_vb + off_h * stride_vh + offs_n[:, None] * stride_vn + offs_d[None, :] * stride_vd
    if EVEN:
        q = tl.load(q_ptrs)
    else:
        q = tl.load(q_ptrs, mask=offs_m[:, None] < N, other=0.0)

    m_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)

    if CAUSAL:
        # Keys below the block's first query are visible to all its rows and
        # lie inside N: no mask. Then the diagonal tiles, with the triangle.
        acc, l_i, m_i = _attn_stage(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn,
                                    offs_m, 0, start_m, N, qk_scale,
                                    BLOCK_N, False, False, LAZY, DOT_PREC)
        acc, l_i, m_i = _attn_stage(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn,
                                    offs_m, start_m, tl.minimum(start_m + BLOCK_M, N), N, qk_scale,
                                    BLOCK_N, True, not EVEN, LAZY, DOT_PREC)
    else:
        full_hi = (N // BLOCK_N) * BLOCK_N
        acc, l_i, m_i = _attn_stage(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn,
                                    offs_m, 0, full_hi, N, qk_scale,
                                    BLOCK_N, False, False, LAZY, DOT_PREC)
        if not EVEN:
            acc, l_i, m_i = _attn_stage(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn,
                                        offs_m, full_hi, N, N, qk_scale,
                                        BLOCK_N, False, True, LAZY, DOT_PREC)

    # Every row (those past N too: they see key 0, read as zeros or not) has
    # l >= 1, since its max term contributes 2^0 or more.
    acc = acc / l_i[:, None]
    lse = (m_i + tl.math.log2(l_i)) * 0.6931471805599453  # back to the natural log
    lse_ptrs = LSE + off_bh.to(tl.int64) * N + offs_m
    o_ptrs = O + off_b * stride_ob + off_h * stride_oh + offs_m[:, None] * stride_on + offs_d[None, :] * stride_od
    if EVEN:
        tl.store(lse_ptrs, lse)
        tl.store(o_ptrs, acc.to(O.dtype.element_ty))
    else:
        tl.store(lse_ptrs, lse, mask=offs_m < N)
        tl.store(o_ptrs, acc.to(O.dtype.element_ty), mask=offs_m[:, None] < N)


# (BLOCK_M, BLOCK_N, num_warps, num_stages, LAZY) per head dim, for an
# H200 and 16-bit inputs with enough query blocks to fill its 132 SMs.
# num_warps 8 at BLOCK_M 128 gives each of the two warpgroups 64 query rows;
# at D = 128 a (128 x 128) K tile plus V tile is 64 KiB, so two stages of
# prefetch (plus Q) fit in shared memory where three would not.
CONFIGS = {
    16: (128, 64, 4, 3, False),
    32: (128, 64, 4, 3, False),
    64: (128, 64, 8, 3, False),  # H200 sweep (tests/bench/FA_NOTES.md): 0.92x SDPA, full and causal
    128: (128, 128, 8, 3, False),  # 0.77x (full) / 0.83x (causal): the best of the sweep at D = 128
}
# Few heads or short sequences: not enough 128-row blocks to fill the GPU, so
# smaller query blocks (twice as many programs, shorter critical path).
SMALL_GRID = (64, 64, 4, 3, False)
# float32 inputs on a GPU: the dot runs on CUDA cores in
# full precision; small tiles keep its registers and shared memory in bounds.
FLOAT32 = (64, 32, 4, 2, False)
# Triton's interpreter (CPU tensors): each tl operation is one NumPy call on a
# whole tile, and the time goes to the calls, not the arithmetic. The biggest
# tiles are the fastest: 2-3x FLOAT32's on the test groups' shapes.
INTERPRETER = (128, 64, 4, 1, False)
NUM_SMS = 132


def _config(B, H, N, D, dtype, device_type="cuda"):
    if device_type == "cpu":
        return INTERPRETER
    if dtype == torch.float32:
        return FLOAT32
    if triton.cdiv(N, 128) * B * H < NUM_SMS:
        return SMALL_GRID
    return CONFIGS[D]


def _launch(q, k, v, causal, sm_scale, block_m, block_n, num_warps, num_stages, lazy=False):
    """The forward with explicit tuning knobs (tests/bench/fa_tune.py sweeps them); returns (o, lse, kernel)."""
    B, H, N, D = q.shape
    scale = 1.0 / math.sqrt(D) if sm_scale is None else float(sm_scale)
    # The kernel takes the row max on unscaled scores (see _attn_tile).
    assert scale > 0, "sm_scale must be positive"
    o = torch.empty((B, H, N, D), dtype=q.dtype, device=q.device)
    lse = torch.empty((B, H, N), dtype=torch.float32, device=q.device)
    num_m_blocks = triton.cdiv(N, block_m)
    kernel = _flash_fwd_kernel[(num_m_blocks, B * H)](
        q, k, v, o, lse,
        scale * LOG2E, N, H, num_m_blocks,
        q.stride(0), q.stride(1), q.stride(2), q.stride(3),
        k.stride(0), k.stride(1), k.stride(2), k.stride(3),
        v.stride(0), v.stride(1), v.stride(2), v.stride(3),
        o.stride(0), o.stride(1), o.stride(2), o.stride(3),
        HEAD_DIM=D, BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=bool(causal),
        EVEN=N % block_m == 0, LAZY=bool(lazy),
        # float32 inputs: tl.dot would round them to TF32 on the GPU by default.
        DOT_PREC="ieee" if q.dtype == torch.float32 else "tf32",
        num_warps=num_warps, num_stages=num_stages,
    )
    return o, lse, kernel


def flash_attention_forward(q, k, v, causal, sm_scale):
    B, H, N, D = q.shape
    block_m, block_n, num_warps, num_stages, lazy = _config(B, H, N, D, q.dtype, q.device.type)
    o, lse, _ = _launch(q, k, v, causal, sm_scale, block_m, block_n, num_warps, num_stages, lazy)
    return _Out(o, lse)

from collections import namedtuple

_Out = namedtuple("_Out", "o lse")
