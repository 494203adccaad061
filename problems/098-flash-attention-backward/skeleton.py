"""Problem 98 - FlashAttention backward. Fill in the kernels, then: python -m judge submit 98 this_file.py"""

import math

import torch
import triton
import triton.language as tl


@triton.jit
def bwd_preprocess_kernel(o_ptr, do_ptr, delta_ptr, H, N,
                          so_b, so_h, so_n, so_d, sdo_b, sdo_h, sdo_n, sdo_d,
                          BLOCK_M: tl.constexpr, HEAD_DIM: tl.constexpr):
    pid_m = tl.program_id(0)  # which block of query rows
    pid_bh = tl.program_id(1)  # which (batch, head): b = pid_bh // H, h = pid_bh % H
    # TODO: delta[pid_bh, i] = sum over d of o[b, h, i, d] * do[b, h, i, d], in float32,
    # for the BLOCK_M rows of this block (mask the rows >= N).


@triton.jit
def bwd_dkdv_kernel(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dk_ptr, dv_ptr, H, N, sm_scale,
                    sq_b, sq_h, sq_n, sq_d, sk_b, sk_h, sk_n, sk_d, sv_b, sv_h, sv_n, sv_d,
                    sdo_b, sdo_h, sdo_n, sdo_d, sl_b, sl_h, sl_n,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr,
                    CAUSAL: tl.constexpr):
    pid_n = tl.program_id(0)  # which block of keys
    pid_bh = tl.program_id(1)
    # TODO: load this block's K and V; loop over the query blocks that can see it,
    # rebuilding P = exp(sm_scale * Q K^T - lse) tile by tile (mask j > i if CAUSAL,
    # and rows/columns past N); accumulate dV += P^T dO and dK += dS^T Q with
    # dS = P * (dO V^T - delta); store dK * sm_scale and dV (dk and dv are contiguous).


@triton.jit
def bwd_dq_kernel(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dq_ptr, H, N, sm_scale,
                  sq_b, sq_h, sq_n, sq_d, sk_b, sk_h, sk_n, sk_d, sv_b, sv_h, sv_n, sv_d,
                  sdo_b, sdo_h, sdo_n, sdo_d, sl_b, sl_h, sl_n,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr,
                  CAUSAL: tl.constexpr):
    pid_m = tl.program_id(0)  # which block of queries
    pid_bh = tl.program_id(1)
    # TODO: load this block's Q, dO, lse and delta; loop over the key blocks it can
    # see, accumulating dQ += dS K; store dQ * sm_scale (dq is contiguous).


def flash_attention_backward(q, k, v, o, lse, do, causal, sm_scale):
    B, H, N, D = q.shape
    scale = 1.0 / math.sqrt(D) if sm_scale is None else float(sm_scale)
    dq = torch.empty((B, H, N, D), dtype=q.dtype, device=q.device)
    dk = torch.empty((B, H, N, D), dtype=k.dtype, device=k.device)
    dv = torch.empty((B, H, N, D), dtype=v.dtype, device=v.device)
    delta = torch.empty((B * H, N), dtype=torch.float32, device=q.device)
    BLOCK = 32
    bwd_preprocess_kernel[(triton.cdiv(N, BLOCK), B * H)](
        o, do, delta, H, N, *o.stride(), *do.stride(), BLOCK_M=BLOCK, HEAD_DIM=D)
    strides = (*q.stride(), *k.stride(), *v.stride(), *do.stride(), *lse.stride())
    bwd_dkdv_kernel[(triton.cdiv(N, BLOCK), B * H)](
        q, k, v, do, lse, delta, dk, dv, H, N, scale, *strides,
        BLOCK_M=BLOCK, BLOCK_N=BLOCK, HEAD_DIM=D, CAUSAL=bool(causal))
    bwd_dq_kernel[(triton.cdiv(N, BLOCK), B * H)](
        q, k, v, do, lse, delta, dq, H, N, scale, *strides,
        BLOCK_M=BLOCK, BLOCK_N=BLOCK, HEAD_DIM=D, CAUSAL=bool(causal))
    return dq, dk, dv
