# No tl.dot at all: the inputs are first copied to contiguous row-major
# tensors (a copy computes nothing, so it is allowed), then each program sums
# broadcast products a[m, k] * b[k, n] over a 32 x 16 x 32 block in float32 and
# reduces the k axis with tl.sum. Exact float32 products (no TF32), slower on
# a GPU because it does not use the tensor cores.
import torch
import triton
import triton.language as tl


@triton.jit
def outer_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                 BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    m = pid_m * BM + tl.arange(0, BM)
    n = pid_n * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
        b = tl.load(b_ptr + k[:, None] * N + n[None, :], mask=(k[:, None] < K) & (n[None, :] < N), other=0.0)
        prod = a.to(tl.float32)[:, :, None] * b.to(tl.float32)[None, :, :]
        acc += tl.sum(prod, axis=1)
    tl.store(c_ptr + m[:, None] * N + n[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(m[:, None] < M) & (n[None, :] < N))


def matmul(a, b):
    a = a.contiguous()
    b = b.contiguous()
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(M, 32), triton.cdiv(N, 32))
    outer_kernel[grid](a, b, c, M, N, K, BM=32, BN=32, BK=16, num_warps=8)
    return c
