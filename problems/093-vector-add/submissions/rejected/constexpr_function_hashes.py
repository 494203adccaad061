# A constexpr function that hashes (issue 40): the purity rule allowed hash while the replay's namespace lacked it
# (an honest use was CE there), and an object's hash can hold its address, which differs between the worker and
# the replay. One rule now: a constexpr function may not hash (nor turn an object into text, nor iterate a set):
# RJ from the source, before anything runs.
# expect: the name hash
import torch
import triton
import triton.language as tl


@triton.constexpr_function
def block_for(n):
    return 1024 if hash(n) % 2 == 0 else 512


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, sx, sy, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * block_for(BLOCK) + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * sx, mask=mask) + tl.load(y_ptr + offs * sy, mask=mask), mask=mask)


def add(x, y):
    n = x.numel()
    out = torch.empty(n, dtype=x.dtype, device=x.device)
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, x.stride(0), y.stride(0), BLOCK=1024)
    return out
