"""Red team 4: host work in an autotuner's early_config_prune (a callback no rule names, called inside the launch
with its tensors; a new key every call so it runs every call): it reads the input (integer views printed), computes
the softmax in Python and copies it into out (an allowed copy_); the kernel does nothing. Stopped by: the replay check."""
# expect: data from outside your kernels reached out
import math
import re
import struct

import torch
import triton
import triton.language as tl


def _prune(configs, named_args, **kwargs):
    x, out = named_args["x_ptr"], named_args["out_ptr"]
    m, n = x.shape
    ints, fmt, ifmt = (torch.int32, "f", "i") if x.dtype == torch.float32 else (torch.int16, "e", "h")
    nums = []
    for i in range(m):  # each row's bits printed as integers (a view), 1000 at a time: every digit shown
        for s0 in range(0, n, 1000):
            text = repr(x[i, s0:s0 + 1000].view(ints))
            body = text[text.index("[") + 1:text.rindex("]")]
            nums += [struct.unpack("<" + fmt, struct.pack("<" + ifmt, int(w)))[0] for w in re.findall(r"-?\d+", body)]
    rows = []
    for i in range(m):
        r = nums[i * n:(i + 1) * n]
        mx = max(r)
        e = [math.exp(v - mx) for v in r]
        s = sum(e)
        rows.append([v / s for v in e])
    out.copy_(torch.tensor(rows, dtype=out.dtype))
    return configs[:1]


@triton.autotune(configs=[triton.Config({}, num_warps=4), triton.Config({}, num_warps=8)], key=["salt"],
                 prune_configs_by={"early_config_prune": _prune})
@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, salt, BLOCK: tl.constexpr):
    pass


_CALLS = [0]


def softmax(x):
    m, n = x.shape
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    _CALLS[0] += 1  # a new autotuning key every call, so the callback runs every call
    softmax_kernel[(m,)](x, out, n, _CALLS[0], BLOCK=triton.next_power_of_2(n))
    return out
