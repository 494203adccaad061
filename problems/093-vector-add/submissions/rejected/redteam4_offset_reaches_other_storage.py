"""Red team 4: the kernel reads memory no argument gave it: x_ptr plus an int, the distance in elements from x to a
host-made answer (read by printing integer views). The kernel reads and makes no address, so the address rule
passes it, and the answer's storage is in no record. Stopped by: the replay check (RJ: the distance leads nowhere there)."""
# expect: the replay check
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, sx, sy, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * sx, mask=mask) + tl.load(y_ptr + offs * sy, mask=mask), mask=mask)


def _launch(x, y, out):
    n = x.numel()
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, x.stride(0), y.stride(0), BLOCK=1024)
    return out


import re
import struct


def _answer(x, y):
    fmt = {torch.float32: "f", torch.float16: "e"}[x.dtype]
    ints = {torch.float32: torch.int32, torch.float16: torch.int16}[x.dtype]
    vals = []
    for t in (x, y):
        text = repr(t.view(ints)) if t.is_contiguous() else repr(t.clone().view(ints))
        body = text[text.index("[") + 1:text.rindex("]")] if "[" in text else text[text.index("(") + 1:text.rindex(")")]
        vals.append([struct.unpack("<" + fmt, struct.pack("<" + fmt.replace("f", "i").replace("e", "h"), int(w)))[0]
                     for w in re.findall(r"-?\d+", body.split("dtype")[0])])
    out = []
    for a, b in zip(*vals):
        try:
            out.append(struct.unpack("<" + fmt.replace("f", "i").replace("e", "h"), struct.pack("<" + fmt, a + b))[0])
        except OverflowError:
            out.append(struct.unpack("<" + fmt.replace("f", "i").replace("e", "h"), struct.pack("<" + fmt, float("inf")))[0])
    return torch.tensor(out, dtype=ints).view(x.dtype)


@triton.jit
def copy_far_kernel(x_ptr, out_ptr, n, far, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + far + offs, mask=mask), mask=mask)


def add(x, y):
    n = x.numel()
    ans = _answer(x, y)
    out = torch.empty(n, dtype=x.dtype, device=x.device)
    far = (ans.data_ptr() - x.data_ptr()) // x.element_size()
    copy_far_kernel[(triton.cdiv(n, 1024),)](x, out, n, far, BLOCK=1024)
    return out
