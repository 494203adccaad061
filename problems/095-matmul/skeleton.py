"""Problem 95 - matrix multiplication. Fill in the kernel, then: python -m judge submit 95 this_file.py"""

import torch
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)  # rows of c in this tile
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)  # columns of c in this tile
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    # TODO: loop over K in steps of BLOCK_K: load a (BLOCK_M, BLOCK_K) tile of a
    # and a (BLOCK_K, BLOCK_N) tile of b (use the strides: a and b may be
    # transposed or padded views; mask the edges, K need not be a multiple of
    # BLOCK_K) and add tl.dot(a_tile, b_tile) into acc.
    # TODO: store acc, cast to c's dtype, into c[offs_m, offs_n] (masked).


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    BLOCK_M, BLOCK_N, BLOCK_K = 64, 64, 32
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    matmul_kernel[grid](
        a, b, c, M, N, K,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
    )
    return c
