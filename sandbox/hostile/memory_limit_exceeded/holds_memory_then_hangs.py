# Fills host memory to just under problem 93's limit (4096 MiB), then hangs.
# Near a cgroup's cap the kernel reclaims instead of killing at once, so a
# memory bomb on a busy host can stall past the case's time rather than die;
# the judge calls a worker that runs out of time while holding 95% or more of
# its memory MLE, not TLE. This file makes that state on purpose: no OOM kill
# ever comes, only the timeout, and the verdict must still say memory.
# expect: memory
import time

import torch
import triton
import triton.language as tl

LIMIT_MIB = 4096


def _anonymous_mib():
    # What the judge counts: anonymous and shared memory, not mapped files.
    kib = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("RssAnon:", "RssShmem:")):
                kib += int(line.split()[1])
    return kib >> 10


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n, sx, sy, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * sx, mask=mask) + tl.load(y_ptr + offs * sy, mask=mask), mask=mask)


def add(x, y):
    hoard = []
    while _anonymous_mib() < 0.97 * LIMIT_MIB:
        hoard.append(torch.ones(16 << 20, dtype=torch.uint8))  # host memory, on a GPU too
    while True:
        time.sleep(1)
