# Red team, 2026-12-01: no Triton arithmetic at all. In the interpreter a
# @triton.jit body is plain Python, so this "kernel" moves the row with
# tl.load/tl.store but reaches the loaded block's NumPy buffer (v.handle.data)
# and computes the softmax with Python floats and math.exp. Every answer is
# right, and the replay ran the same body, so only one check can see it: the
# kernel does not compile for a GPU (judge.untrusted.frontend lowers each
# launched kernel to Triton IR for sm_90 and the compiler refuses .handle).
# expect: would not compile for a GPU
import math
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < N
    v = tl.load(x_ptr + row * stride + offs, mask=mask, other=0.0)
    a = v.handle.data
    vals = [float(a[i]) for i in range(int(N.handle.data[0]))]
    m = [max(vals)]
    ex = [math.exp(t - m[0]) for t in vals]
    s = [sum(ex)]
    for i in range(len(ex)):
        a.put(i, ex[i] / s[0])
    tl.store(out_ptr + row * N + offs, v, mask=mask)


def softmax(x):
    M, N = x.shape
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    softmax_kernel[(M,)](x, out, N, x.stride(0), BLOCK=triton.next_power_of_2(N))
    return out
