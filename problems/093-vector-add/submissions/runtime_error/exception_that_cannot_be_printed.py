# Raises an exception whose __str__ raises in turn (issue 40: the worker's own error handling died on it, and the
# judge's traceback was shown as printed by the submission). RTE, with a neutral message.
# expect: whose message could not be shown
import torch
import triton
import triton.language as tl


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no text for you")


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def add(x, y):
    raise Unprintable()
