"""Red team 4: sys.addaudithook: once armed (after the first call) the hook raises at every audited event of the
process, the judge's own code in the worker included (its imports, opens, compiles).
Stopped by: the static scan (sys.addaudithook); with it off, the worker's failure is the file's: RTE (the process
exited in the middle of a case), never IE (tests/test_anticheat_runtime.py)."""
# expect: sys.addaudithook
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


import sys
_ARMED = []


def _hook(event, args):
    if _ARMED and event not in ("exec",):
        raise RuntimeError("audit " + event)


sys.addaudithook(_hook)


def add(x, y):
    out = _launch(x, y, torch.empty(x.numel(), dtype=x.dtype, device=x.device))
    _ARMED.append(1)
    return out
