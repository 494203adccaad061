# Computes attention with PyTorch (matmul, masked_fill, softmax, logsumexp): no Triton kernel.
# expect: PyTorch operators
import math

import torch


def flash_attention_forward(q, k, v, causal, sm_scale):
    scale = 1.0 / math.sqrt(q.shape[-1]) if sm_scale is None else sm_scale
    s = (q.float() @ k.float().transpose(-1, -2)) * scale
    if causal:
        n = q.shape[-2]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    o = (torch.softmax(s, dim=-1) @ v.float()).to(q.dtype)
    return o, lse
