# The kernel waits for a flag that is never set. (A loop that merely counts
# forever is not enough on a GPU: the compiler may delete a loop without side
# effects. A volatile load it must keep.)
# expect: no answer within
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, flag_ptr, n, sx, sy, BLOCK: tl.constexpr):
    while tl.load(flag_ptr, volatile=True) == 0:
        pass
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * sx, mask=mask) + tl.load(y_ptr + offs * sy, mask=mask), mask=mask)


def add(x, y):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    flag = torch.zeros(1, dtype=torch.int32, device=x.device)
    add_kernel[(triton.cdiv(x.numel(), 128),)](x, y, out, flag, x.numel(), x.stride(0), y.stride(0), BLOCK=128)
    return out
