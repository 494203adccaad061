# Bug: in the looped two-pass kernel the weight is loaded at the tile's local
# offsets (w_ptr + arange) instead of its columns (w_ptr + off + arange), so every
# tile after the first reuses the first tile's weights. With 4096-wide tiles only
# rows longer than 4096 are affected (long-rows group).
# expect: long-rows
import torch
import triton
import triton.language as tl


@triton.jit
def rmsnorm_looped(x_ptr, w_ptr, y_ptr, N, sx, sy, eps, TILE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros([TILE], dtype=tl.float32)
    for off in range(0, N, TILE):
        cols = off + tl.arange(0, TILE)
        x = tl.load(x_ptr + row * sx + cols, mask=cols < N, other=0.0).to(tl.float32)
        acc += x * x
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    for off in range(0, N, TILE):
        lanes = tl.arange(0, TILE)
        cols = off + lanes
        mask = cols < N
        x = tl.load(x_ptr + row * sx + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + lanes, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * sy + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def rmsnorm(x, weight, eps):
    M, N = x.shape
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    rmsnorm_looped[(M,)](x, weight, y, N, x.stride(0), y.stride(0), eps, TILE=4096, num_warps=8)
    return y
