"""Red team 4 (GPU): the kernel tells a timed call by its output's first value: judged cases and the replay
allocate with the NaN fill, the speed run's timed calls without it; a row starting non-NaN is left unnormalised.
Honest in the interpreter (AC). On a GPU the drawn timed call's outputs are checked against the golden model: WA."""
# verdict-gpu: WA
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, sx, so, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * sx + cols, mask=mask, other=-float("inf")).to(tl.float32)
    first = tl.load(out_ptr + row * so)
    e = tl.exp(x - tl.max(x, axis=0))
    if first != first:  # NaN: a judged case or a replay
        e = e / tl.sum(e, axis=0)
    tl.store(out_ptr + row * so + cols, e.to(out_ptr.dtype.element_ty), mask=mask)


def softmax(x):
    m, n = x.shape
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    softmax_kernel[(m,)](x, out, n, x.stride(0), out.stride(0), BLOCK=triton.next_power_of_2(n))
    return out
