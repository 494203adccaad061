# Computes with NumPy and never launches a kernel (on a GPU, .cpu() is refused first).
# expect: NumPy
# (The static scan finds NumPy first; tests/test_anticheat_runtime.py judges it
# with the scan off: no Triton kernel launched, or on a GPU the .cpu() copy.)
import torch


def add(x, y):
    a, b = x.cpu().numpy(), y.cpu().numpy()
    return torch.from_numpy(a + b).to(x.device)
