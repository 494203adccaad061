"""register() raises before it registers anything: every group is RTE, with the file's line."""
# expect: error in register(namespace): ValueError: no operator for you

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def register(namespace):
    if namespace:
        raise ValueError("no operator for you")
    return torch.empty
