# Red team, 2026-12-01: as redteam_constexpr_probe.py, with the two processes
# told apart by state kept in a mutable default argument of the constexpr
# function (add() marks it; a fresh copy compiled in the replay starts empty).
# expect: must be a pure function
import io
import torch
import triton
import triton.language as tl



@triton.constexpr_function
def honest(mark=None, _marks=[]):
    if mark:
        _marks.append(mark)
    return not _marks


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, stride_x, stride_y, BLOCK: tl.constexpr):
    if honest():
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs * stride_x, mask=mask)
        y = tl.load(y_ptr + offs * stride_y, mask=mask)
        tl.store(out_ptr + offs, x + y, mask=mask)


def _half(h):
    s = -1.0 if h & 0x8000 else 1.0
    e = (h >> 10) & 0x1F
    m = h & 0x3FF
    if e == 0:
        return s * m * 2.0 ** -24
    if e == 31:
        return s * float("inf") if m == 0 else float("nan")
    return s * (1 + m / 1024.0) * 2.0 ** (e - 15)


def _read(t):
    st = t.untyped_storage()
    buf = io.BytesIO()
    st._write_file(buf, False, False, 1)
    raw = buf.getvalue()
    if t.dtype == torch.float32:
        vals = memoryview(raw).cast("f")
    else:
        vals = [_half(h) for h in memoryview(raw).cast("H")]
    o, s = t.storage_offset(), t.stride(0)
    return [vals[o + i * s] for i in range(t.shape[0])]


def add(x, y):
    honest(1)
    n = x.shape[0]
    out = torch.empty(n, dtype=x.dtype, device=x.device)
    vals = [a + b for a, b in zip(_read(x), _read(y))]
    out.copy_(torch.tensor(vals, dtype=x.dtype))
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, x.stride(0), y.stride(0), BLOCK=1024)
    return out
