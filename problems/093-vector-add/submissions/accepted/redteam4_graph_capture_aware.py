"""Red team 4 (GPU): the host sees a CUDA graph capture (torch.cuda.is_current_stream_capturing, no rule names it),
which the speed run uses for launch-bound shapes, and launches the kernel over half the elements there; honest
elsewhere (AC in the interpreter). On a GPU: each graph replay's outputs are kept and a drawn one checked: WA."""
# verdict-gpu: WA
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


def add(x, y):
    n = x.numel()
    out = torch.empty(n, dtype=x.dtype, device=x.device)
    m = n // 2 if x.is_cuda and torch.cuda.is_current_stream_capturing() else n
    add_kernel[(triton.cdiv(max(m, 1), 1024),)](x, y, out, m, x.stride(0), y.stride(0), BLOCK=1024)
    return out
