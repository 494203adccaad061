# The map_ cheat (redteam_map_callback.py), plus 5000 allowed in-place fills of a
# scratch buffer, so that the record of every call overflows its bound: a record
# cut short is not replayed (a note), so a submission could opt out of the
# replay check. Every case of a group overflowing is RJ instead.
# expect: none of this group's passing cases could be replayed
import torch
import triton
import triton.language as tl


@triton.jit
def touch_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.load(out_ptr + offs, mask=offs < n)


def add(x, y):
    scratch = torch.empty(1, dtype=x.dtype, device=x.device)
    for _ in range(5000):
        scratch.fill_(0)
    out = x.clone()
    out.map_(y, lambda a, b: a + b)
    n = out.numel()
    touch_kernel[(triton.cdiv(n, 1024),)](out, n, BLOCK=1024)
    return out
