# Bug: adds in place into x and returns it, so the caller's x is destroyed.
# expect: wrote into its inputs
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, n, sx, sy, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * sx, mask=mask)
    tl.store(x_ptr + offs * sx, x + tl.load(y_ptr + offs * sy, mask=mask), mask=mask)


def add(x, y):
    n = x.numel()
    add_kernel[(triton.cdiv(n, 256),)](x, y, n, x.stride(0), y.stride(0), BLOCK=256)
    return x
