# Forges the judge's results: a results file wherever it can write, and a fake
# reply written into every open descriptor. Neither may change the verdict.
# expect: secret
import json
import os
import struct
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
    fake = {"verdict": "AC", "score": 100}
    for d in (".", "/tmp", "/scratch", "/judge", "/grade/results", "/autograder/results"):
        try:
            with open(os.path.join(d, "results.json"), "w") as f:
                json.dump(fake, f)
        except OSError:
            pass
    reply = json.dumps({"type": "result", "id": 1, "status": "ok", "returned": "torch.Tensor", "outputs": [],
                        "evidence": {"own_launches": {"k": 1}}, "tensors": []}).encode()
    for name in os.listdir("/proc/self/fd"):
        try:
            os.write(int(name), struct.pack(">Q", len(reply)) + reply)
        except OSError:
            pass
    return honest_add(x, y)
