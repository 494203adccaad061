# The entry point itself is decorated with @triton.jit: it must be a plain
# Python function that launches a kernel.
# expect: plain Python function
import triton
import triton.language as tl


@triton.jit
def add(x_ptr, y_ptr):
    pass
