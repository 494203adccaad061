# Bug: the first element comes out wrong whenever x[0] is negative, so about half
# of all drawn inputs catch it and half do not. The replay check draws fresh values
# for a passing case, and its launches, replayed alone, then miss the answer about
# half the time; the judge runs those fresh values in the submission's own worker
# too, where the file is just as wrong: a wrong answer, never RJ (the replay check
# once called such files forgeries: 96's missing_eps, 93's nan_to_zero).
# expect: values outside the tolerance
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, sx, sy, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    s = tl.load(x_ptr + offs * sx, mask=mask) + tl.load(y_ptr + offs * sy, mask=mask)
    first = tl.load(x_ptr)
    s = tl.where(offs == 0, tl.where(first < 0, s + 1.0, s), s)
    tl.store(out_ptr + offs, s, mask=mask)


def add(x, y):
    n = x.numel()
    out = torch.empty(n, dtype=x.dtype, device=x.device)
    add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, x.stride(0), y.stride(0), BLOCK=256)
    return out
