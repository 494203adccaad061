# The arithmetic in plain Python on a bytes round trip: the values are read out
# with Tensor.apply_ callbacks, added in Python, packed with struct and brought
# back with torch.frombuffer (none of which is a dispatched operator), cast with
# an allowed .to(), and a kernel only copies them into the output. Replayed on
# fresh inputs, the staged bytes still hold the first inputs' sums.
# expect: apply_
import struct

import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


def _values(t):
    seen = []
    t.clone().apply_(lambda v: seen.append(v) or v)
    return seen


def add(x, y):
    n = x.numel()
    sums = [a + b for a, b in zip(_values(x), _values(y))]
    staged = torch.frombuffer(bytearray(struct.pack(f"<{n}d", *sums)), dtype=torch.float64).to(x.dtype)
    out = torch.empty(n, dtype=x.dtype, device=x.device)
    copy_kernel[(triton.cdiv(n, 1024),)](staged, out, n, BLOCK=1024)
    return out
