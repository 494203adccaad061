# expect: line 9
import torch
import triton
import triton.language as tl


def add(x, y):
    out = torch.empty_like(x)
    for i in range(3)
        pass
    return out
