"""Red team 4b: torch.set_default_device("meta") at import (no rule names it), so that the judge's own allocations
in the worker without a device (inputs rebuilt from the wire, the wire's copies) would land on the meta device.
None does: each names its device. An honest add, AC."""
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


torch.set_default_device("meta")


def add(x, y):
    return _launch(x, y, torch.empty(x.numel(), dtype=x.dtype, device=x.device))
