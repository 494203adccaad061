# Recomputes the attention forward in PyTorch and lets autograd produce the
# gradients: no Triton kernel at all.
# expect: PyTorch operators
import math

import torch


def flash_attention_backward(q, k, v, o, lse, do, causal, sm_scale):
    n, d = q.shape[-2], q.shape[-1]
    scale = 1.0 / math.sqrt(d) if sm_scale is None else sm_scale
    with torch.enable_grad():
        qf, kf, vf = (t.detach().float().requires_grad_() for t in (q, k, v))
        s = (qf @ kf.transpose(-1, -2)) * scale
        if causal:
            s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
        out = torch.softmax(s, dim=-1) @ vf
        dq, dk, dv = torch.autograd.grad(out, (qf, kf, vf), do.float())
    return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype)
