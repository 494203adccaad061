"""Reference solution for problem 96 (RMSNorm): the speed bar and proof of solvability.

RMSNorm is memory bound: one read of x, one write of y, the weight stays in
cache. Two kernels, picked by the row length:

* rows of up to 32768 elements (the whole domain): a program takes ROWS whole
  rows as one [ROWS, BLOCK_N] tile, so short rows still give every warp full,
  coalesced loads; the row sums are tl.sum over axis 1. A 32768-wide fp32 row
  is 64 registers a thread at 16 warps, which still runs at full bandwidth;
* longer rows: one program per row loops over column tiles twice, first
  accumulating the sum of squares, then normalizing (the second read of the
  row mostly hits L2).

Statistics are float32 whatever the input dtype (a float16 square overflows
past |x| = 256), padded lanes load 0 so they add nothing, the mean divides by
the true n, and eps sits under the square root. The one reciprocal square
root per row is computed with IEEE rounding, which costs nothing here.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_rows_kernel(x_ptr, w_ptr, y_ptr, M, N, stride_xm, stride_ym, eps,
                         ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid.to(tl.int64) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    row_ok = rows < M
    col_ok = cols < N
    mask = row_ok[:, None] & col_ok[None, :]
    x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    mean_sq = tl.sum(x * x, axis=1) / N
    rstd = tl.div_rn(1.0, tl.sqrt_rn(mean_sq + eps))
    w = tl.load(w_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
    y = (x * rstd[:, None]) * w[None, :]
    tl.store(y_ptr + rows[:, None] * stride_ym + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _rmsnorm_looped_kernel(x_ptr, w_ptr, y_ptr, N, stride_xm, stride_ym, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_xm
    y_row = y_ptr + row * stride_ym
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_row + cols, mask=cols < N, other=0.0).to(tl.float32)
        acc += x * x
    mean_sq = tl.sum(acc, axis=0) / N
    rstd = tl.div_rn(1.0, tl.sqrt_rn(mean_sq + eps))
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        m = cols < N
        x = tl.load(x_row + cols, mask=m, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=m, other=0.0).to(tl.float32)
        tl.store(y_row + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=m)


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    M, N = x.shape
    if x.stride(1) != 1:
        x = x.contiguous()
    if weight.stride(0) != 1:
        weight = weight.contiguous()
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    if M == 0 or N == 0:
        return y
    eps = float(eps)
    if N <= 32768:
        block_n = triton.next_power_of_2(N)
        # About 2048 elements per program: several rows per program when rows are
        # short (n = 128: 16 rows), one row otherwise. Measured on an H200 with
        # 2-byte and 4-byte data, this beat both larger tiles and the looped kernel.
        rows = max(1, min(64, 2048 // block_n))
        tile = rows * block_n
        num_warps = 4 if tile <= 2048 else 8 if tile <= 8192 else 16
        grid = (triton.cdiv(M, rows),)
        _rmsnorm_rows_kernel[grid](x, weight, y, M, N, x.stride(0), y.stride(0), eps,
                                   ROWS=rows, BLOCK_N=block_n, num_warps=num_warps)
    else:
        _rmsnorm_looped_kernel[(M,)](x, weight, y, N, x.stride(0), y.stride(0), eps,
                                     BLOCK_N=4096, num_warps=16)
    return y
