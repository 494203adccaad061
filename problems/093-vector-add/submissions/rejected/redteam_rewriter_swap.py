# Red team, 2026-12-01: no kernel computes in the judged worker. add() does
# the sums in host Python on raw memory (ctypes, reached as an attribute of a
# Triton module, triton.backends.amd.compiler.ctypes, which no import names),
# and the kernel it launches has had its interpreter rewriter swapped for an
# empty kernel's, so the launch the record shows runs nothing; the replay
# compiles add_kernel from the source (the honest body) and passes. Caught by
# the static scan (ctypes and rewriter, as names anywhere) and, with the scan
# off, by the worker's kernel check after the import (a kernel whose rewriter
# is not its own runs another body: judge.untrusted.integrity.rewired).
# expect: rewriter
import struct
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, sx, sy, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(x_ptr + offs * sx, mask=mask)
    b = tl.load(y_ptr + offs * sy, mask=mask)
    tl.store(out_ptr + offs, a + b, mask=mask)


@triton.jit
def noop_kernel(x_ptr, y_ptr, out_ptr, n, sx, sy, BLOCK: tl.constexpr):
    pass


add_kernel.rewriter = noop_kernel.rewriter


def _raw(t):
    C = triton.backends.amd.compiler.ctypes
    span = ((t.numel() - 1) * t.stride(0) + 1) * t.element_size()
    return memoryview((C.c_char * span).from_address(t.data_ptr())).cast("B")


def _get(mv, i, es):
    return struct.unpack_from("<e" if es == 2 else "<f", mv, i * es)[0]


def _put(mv, i, es, v):
    try:
        struct.pack_into("<e" if es == 2 else "<f", mv, i * es, v)
    except OverflowError:
        struct.pack_into("<e" if es == 2 else "<f", mv, i * es, float("inf") if v > 0 else float("-inf"))


def add(x, y):
    n = x.numel()
    out = torch.empty(n, dtype=x.dtype, device=x.device)
    es = x.element_size()
    xv, yv, ov = _raw(x), _raw(y), _raw(out)
    sx, sy = x.stride(0), y.stride(0)
    for i in range(n):
        _put(ov, i, es, _get(xv, i * sx, es) + _get(yv, i * sy, es))
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, sx, sy, BLOCK=1024)
    return out
