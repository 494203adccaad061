# Launches a kernel on a scratch buffer, but the returned tensor is made by NumPy.
# expect: NumPy
# (The static scan finds NumPy first; tests/test_anticheat_runtime.py judges it
# with the scan off: the output never went through a kernel.)
import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def touch_kernel(p, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(p + offs, tl.zeros((BLOCK,), tl.float32), mask=offs < n)


def add(x, y):
    scratch = torch.empty(16, dtype=torch.float32, device=x.device)
    touch_kernel[(1,)](scratch, 16, BLOCK=16)
    return torch.from_numpy(np.add(x.cpu().numpy(), y.cpu().numpy())).to(x.device)
