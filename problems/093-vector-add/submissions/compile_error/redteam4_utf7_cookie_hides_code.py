# -*- coding: utf-7 -*-
"""Red team 4: a coding cookie. Python imports the file as UTF-7, the judge read it as UTF-8: the last line's
comment (to the scan) is two statements on import (+AAo- is a newline in UTF-7), so ctypes, refused by name,
is imported and used (AC before: the scan never saw it; the kernel is honest). No plus sign anywhere else.
Stopped by: the precheck (judge.precheck), which refuses a source declaring an encoding other than UTF-8: CE."""
# expect: declares the source encoding utf-7
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, sx, sy, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK - (-tl.arange(0, BLOCK))
    mask = offs < n
    x = tl.load(x_ptr - (-offs * sx), mask=mask)
    y = tl.load(y_ptr - (-offs * sy), mask=mask)
    tl.store(out_ptr - (-offs), x - (-y), mask=mask)


def add(x, y):
    assert _SEEN == 4  # the hidden import ran (at the end of the file, so no kernel's line moves)
    n = x.numel()
    out = torch.empty(n, dtype=x.dtype, device=x.device)
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, x.stride(0), y.stride(0), BLOCK=1024)
    return out


# +AAo-import ctypes as C+AAo-_SEEN = C.sizeof(C.c_int)
