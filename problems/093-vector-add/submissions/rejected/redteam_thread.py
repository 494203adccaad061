# Red team, 2026-11-30: written against the judge by someone who had not built it;
# it got AC before the fixes that followed (its docstring says how it cheated).
# expect: __self__
"""Cheat: threading obtained without an import statement (print.__self__ is the builtins module);
torch ops in another thread are invisible to the TorchDispatchMode (modes are thread-local).
The thread is joined before returning, so no thread is left over."""
import torch
import triton
import triton.language as tl

_B = print.__self__
_threading = getattr(_B, "__imp" + "ort__")("thread" + "ing")


@triton.jit
def touch_kernel(out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)


def add(x, y):
    n = x.numel()
    out = torch.empty(n, dtype=x.dtype, device=x.device)
    t = _threading.Thread(target=lambda: out.copy_(x + y))
    t.start()
    t.join()
    touch_kernel[(1,)](out, n, BLOCK=16)
    return out
