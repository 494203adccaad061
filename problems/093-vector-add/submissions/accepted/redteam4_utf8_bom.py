"""Red team 4: an honest file saved with a UTF-8 byte-order mark (as some Windows editors do). Python imports it;
the judge once parsed the decoded text with the mark still in it and said CE ("invalid non-printable character
U+FEFF"). Every part of the judge now reads a submission as Python does (judge.shared.kernel_source.read_source):
AC. The file must keep its mark (tests/test_instant_errors.py checks it does)."""
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, sx, sy, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * sx, mask=mask) + tl.load(y_ptr + offs * sy, mask=mask), mask=mask)


def add(x, y):
    n = x.numel()
    out = torch.empty(n, dtype=x.dtype, device=x.device)
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, x.stride(0), y.stride(0), BLOCK=1024)
    return out
