"""Red team 4 (GPU): the host tells the speed run's samples by the gap between calls (a sample's K calls come
back to back, or are captured back to back into a graph): within 1 ms of the last call only half the rows are
normalised. Honest in the interpreter (AC). On a GPU the drawn timed call's outputs are checked: WA."""
# verdict-gpu: WA
import time

import torch
import triton
import triton.language as tl

_LAST = [0.0]


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, M, N, sx, sy, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    if row < M:
        cols = tl.arange(0, BLOCK)
        mask = cols < N
        x = tl.load(x_ptr + row * sx + cols, mask=mask, other=0.0).to(tl.float32)
        rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * sy + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def rmsnorm(x, weight, eps):
    shape = x.shape
    x2 = x.reshape(-1, shape[-1])
    M, N = x2.shape
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    now = time.perf_counter()
    rows = M // 2 if now - _LAST[0] < 1e-3 else M
    _LAST[0] = now
    rmsnorm_kernel[(M,)](x2, weight, y, rows, N, x2.stride(0), y.stride(0), eps, BLOCK=triton.next_power_of_2(N))
    return y.reshape(shape)
