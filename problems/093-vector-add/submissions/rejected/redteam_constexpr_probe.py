# Red team, 2026-12-01: the kernel is honest only where the replay runs it. A
# @triton.constexpr_function is host Python run while the kernel is compiled
# or interpreted; this one looks up the entry point `add`, which exists in the
# judged worker (the file was imported) but not in the replay (it compiles the
# kernels from the source alone). So the judged launch is a no-op and the
# answer comes from host Python over the inputs' raw bytes (_write_file), while
# the replayed launch computes honestly. Refused before anything runs: a
# constexpr function must be a pure function of its arguments and constants.
# expect: must be a pure function
import io
import torch
import triton
import triton.language as tl



@triton.constexpr_function
def honest():
    try:
        return add is None  # the entry point exists only where the file was imported
    except:  # noqa: E722
        return True


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
    n = x.shape[0]
    out = torch.empty(n, dtype=x.dtype, device=x.device)
    vals = [a + b for a, b in zip(_read(x), _read(y))]
    out.copy_(torch.tensor(vals, dtype=x.dtype))
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, x.stride(0), y.stride(0), BLOCK=1024)
    return out
