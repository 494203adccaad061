"""Problem 93 probe for a GPU (not in the corpus: it is judged with the static scan off, by
tests/gpu/probes/judge_without_scan.py). On a GPU Triton reads a kernel's language once, when it compiles;
this file swaps tl.store for a do-nothing builtin just around its first launch (the one that compiles) and
puts it back before returning, so the cached kernel stores nothing while the language looks untouched after
every call. The worker compares Triton's language where a kernel compiles (launches._wrap_compile): RJ."""

# expect-gpu: triton.language.store (Triton's language
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, sx, sy, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * sx, mask=mask) + tl.load(y_ptr + offs * sy, mask=mask), mask=mask)


@tl.core.builtin
def _stores_nothing(
    pointer, value=None, mask=None, boundary_check=(), cache_modifier="", eviction_policy="", _semantic=None
):
    return None


_HONEST = tl.store


def add(x, y):
    n = x.numel()
    out = torch.empty(n, dtype=x.dtype, device=x.device)
    if n == 0:
        return out
    tl.store = _stores_nothing
    try:
        add_kernel[(triton.cdiv(n, 512),)](x, y, out, n, x.stride(0), y.stride(0), BLOCK=512)
    finally:
        tl.store = _HONEST
    return out
