# The replay-only cheat of exploit2_noop_proc_mem_tensor.py (the sums computed in plain
# Python from the inputs' bytes, read through /proc/self/mem, then copied into the output
# a do-nothing kernel is handed), plus 5000 allowed in-place fills of a scratch buffer, so
# that the record of every call overflows its bound: a record cut short cannot be replayed,
# so a submission could opt out of the replay check. Every passing case must be proven by a
# replay (judge.proofs): its case is run again, and a case not replayable twice is RJ.
# expect-cpu: could not be replayed alone on fresh inputs, twice
# On a GPU the copy from the host tensor into the device output crosses devices, which the operator
# watch does not allow: RJ there before any replay (H200, tests/gpu/logs/2026-12-01c/call2/corpus.txt).
# expect-gpu: PyTorch operators (torch copy_)
import struct

import torch
import triton
import triton.language as tl

CODES = {torch.float32: "f", torch.float16: "e", torch.float64: "d"}


@triton.jit
def touch_kernel(out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)


def _values(mem, t):
    size, stride, n = t.element_size(), t.stride(0), t.numel()
    mem.seek(t.data_ptr())
    raw = mem.read(((n - 1) * stride + 1) * size if n else 0)
    return [struct.unpack_from("<" + CODES[t.dtype], raw, i * stride * size)[0] for i in range(n)]


def add(x, y):
    scratch = torch.empty(1, dtype=x.dtype, device=x.device)
    for _ in range(5000):
        scratch.fill_(0)
    path = "/".join(["", "pr" + "oc", "self", "mem"])
    with open(path, "rb", buffering=0) as mem:
        sums = [a + b for a, b in zip(_values(mem, x), _values(mem, y))]
    out = torch.empty_like(x, memory_format=torch.contiguous_format)
    out.copy_(torch.tensor(sums, dtype=torch.float64).to(x.dtype))
    touch_kernel[(1,)](out, out.numel(), BLOCK=16)
    return out
