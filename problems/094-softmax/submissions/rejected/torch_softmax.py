# Computes the answer with torch.softmax: no Triton kernel at all.
# expect: PyTorch operators
import torch


def softmax(x):
    return torch.softmax(x, dim=-1)
