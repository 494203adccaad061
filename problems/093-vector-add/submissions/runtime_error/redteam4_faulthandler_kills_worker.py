"""Red team 4: faulthandler (an allowed module) arms its C watchdog after an honest call: 50 ms later it dumps
every thread's stack, the judge's included, and exits, in the middle of the protocol.
Stopped by: a worker that exits mid-case is the file's RTE (never IE); no verdict is taken from a half reply."""
# expect: in the middle of a case
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, sx, sy, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * sx, mask=mask) + tl.load(y_ptr + offs * sy, mask=mask), mask=mask)


def _launch(x, y, out):
    n = x.numel()
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, x.stride(0), y.stride(0), BLOCK=1024)
    return out


import faulthandler


def add(x, y):
    out = _launch(x, y, torch.empty(x.numel(), dtype=x.dtype, device=x.device))
    faulthandler.dump_traceback_later(0.05, exit=True)
    return out
