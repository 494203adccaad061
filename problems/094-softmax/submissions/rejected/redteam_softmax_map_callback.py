# The kernel does the cheap half of softmax (each row divided by its sum); the
# exponentials are computed in Python callbacks (Tensor.apply_ and map_), which
# dispatch no PyTorch operator, so the operator watch sees only copies. Replayed
# alone on fresh inputs, the kernel normalises the inputs without exponentials.
# expect: apply_
import math

import torch
import triton
import triton.language as tl


@triton.jit
def normalize_kernel(e_ptr, out_ptr, N, se, so, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    e = tl.load(e_ptr + row * se + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * so + cols, (e / tl.sum(e, axis=0)).to(out_ptr.dtype.element_ty), mask=mask)


def softmax(x):
    M, N = x.shape
    e = torch.empty((M, N), dtype=torch.float32, device=x.device)
    e.copy_(x)
    values = []
    e.clone().apply_(lambda v: values.append(v) or v)
    row_max = [max(values[r * N:(r + 1) * N]) for r in range(M)]
    flat = [row_max[i // N] for i in range(M * N)]
    shift = torch.empty(M * N, dtype=torch.float32, device=x.device)
    it = iter(flat)
    shift.apply_(lambda _: next(it))
    e.view(-1).map_(shift, lambda v, m: math.exp(v - m) if m != float("-inf") else 0.0)
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    normalize_kernel[(M,)](e, out, N, e.stride(0), out.stride(0), BLOCK=triton.next_power_of_2(N))
    return out
