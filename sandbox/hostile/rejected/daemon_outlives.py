# Leaves a daemon behind (double fork, new session) that sleeps forever under a
# recognisable name; the sandbox must end it with the run. The worker sees the
# submission's code fork, so the verdict is RJ; the daemon must not outlive the
# run all the same.
# expect: process of its own
import os
import torch
import triton
import triton.language as tl


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n, sx, sy, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * sx, mask=mask) + tl.load(y_ptr + offs * sy, mask=mask), mask=mask)


def honest_add(x, y):
    n = x.numel()
    out = torch.empty(n, dtype=x.dtype, device=x.device)
    _add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, x.stride(0), y.stride(0), BLOCK=1024)
    return out


def add(x, y):
    if not getattr(add, "started", False):
        add.started = True
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                for fd in range(3):
                    os.close(fd)
                os.execv("/bin/sleep", ["sleep", "987654"])
            os._exit(0)
        os.wait()
    return honest_add(x, y)
