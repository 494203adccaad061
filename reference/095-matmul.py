"""Reference solution for problem 95 (matmul): the speed bar and proof of solvability.

C = A @ B with one program per BLOCK_M x BLOCK_N tile of C, a loop over K in
steps of BLOCK_K, tl.dot on the tiles (tensor cores on the GPU; TF32 for
float32 inputs) and a float32 accumulator rounded once when stored.

* Programs are numbered along a 1-D grid and mapped to tiles in groups of
  GROUP_M tile-rows ("swizzled" order), so programs that run at the same time
  share tiles of A and B in the L2 cache.
* Every stride comes from the tensors, so transposed and padded views work
  without a copy. Offsets are int64: rows * stride can pass 2^31.
* Rows of A and columns of B past the edge are wrapped (offs % M) instead of
  masked when loading: those loads are in bounds and their results are never
  stored, which keeps the loads unmasked along M and N. Only the K tail is
  masked (with zeros, which add nothing) and the store is masked on M and N.
* Block sizes are picked from the shape and dtype (no autotuning): 128 x 256
  (from 2048 x 2048 on) or 128 x 128 tiles with 8 warps and 3 stages for large
  products (at most 144 KiB of shared memory), 64 x 64 from 128 on, and tiles
  shrunk towards the shape (down to 16) for small or skinny products.

Measured on an H200 (Triton 3.6, torch 2.11), TFLOP/s, this file vs
torch.matmul: float16 4096^3 about 690 vs 760 (bfloat16 alike); float16
1000 x 3000 x 777 about 52 vs 73; float32 4096^3 (TF32) about 88 vs 51 (torch
in full float32). A long K on few tiles (64 x 64 x 8192: one program walks all
of K) reaches only about 1 vs 6.5: a split-K variant (partial tiles in a
float32 workspace, then a reduction kernel) was tried and measured slower
there (0.6), its second launch costing more than the parallelism saved.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                   stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                   GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (pid % num_pid_in_group) % group_size_m
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    # Wrapped row/column indices: always in bounds, so loads need no M/N mask.
    rm = (offs_m % M).to(tl.int64)
    rn = (offs_n % N).to(tl.int64)
    rk = offs_k.to(tl.int64)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    cm = offs_m.to(tl.int64)
    cn = offs_n.to(tl.int64)
    c_ptrs = c_ptr + cm[:, None] * stride_cm + cn[None, :] * stride_cn
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask)


def _pow2_between(x, lo, hi):
    return max(lo, min(hi, triton.next_power_of_2(x)))


def _config(M, N, K, dtype):
    """(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages) for this shape."""
    bk_max = 32 if dtype == torch.float32 else 64  # the same bytes per K step
    if M >= 2048 and N >= 2048:
        return 128, 256, bk_max, 8, 3
    if M >= 512 and N >= 512:
        return 128, 128, bk_max, 8, 3
    if M >= 128 and N >= 128:
        return 64, 64, bk_max, 4, 3
    # Small or skinny: shrink the tiles towards the shape (tl.dot needs >= 16).
    bm = _pow2_between(M, 16, 64)
    bn = _pow2_between(N, 16, 64)
    bk = _pow2_between(K, 16, bk_max)
    return bm, bn, bk, 4, 3


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    M, K = a.shape
    K2, N = b.shape
    assert K == K2, f"inner dimensions differ: {K} and {K2}"
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    bm, bn, bk, warps, stages = _config(M, N, K, a.dtype)
    grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
    _matmul_kernel[grid](
        a, b, c, M, N, K,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=warps, num_stages=stages,
    )
    return c
