# Red team, 2026-11-30: written against the judge by someone who had not built it;
# it got AC before the fixes that followed (its docstring says how it cheated).
# expect: getattr()
"""Cheat: a forked child process (os.fork fetched by getattr string) computes x + y with torch into
shared memory; its op watch records only in the child's copy of the worker. The parent waits for it.
The shared buffer is made at import time (no op watch is active then); out is a byte-view of it."""
import os

import torch
import triton
import triton.language as tl

_fork = getattr(os, "fo" + "rk")
_pool = torch.empty(64 << 20, dtype=torch.uint8)
_pool.share_memory_()


@triton.jit
def touch_kernel(out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)


def add(x, y):
    n = x.numel()
    out = _pool[: n * x.element_size()].view(x.dtype)
    pid = _fork()
    if pid == 0:
        try:
            out.copy_(x + y)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    touch_kernel[(1,)](out, n, BLOCK=16)
    return out
