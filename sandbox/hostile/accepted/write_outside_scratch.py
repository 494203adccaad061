# Tries to write where a worker must not: the mounted code and submission, the
# system, the root. Writing its own scratch space (the cwd) and /tmp is allowed.
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


MARKER = "judge-hostile-marker-5b1f"


def add(x, y):
    here = os.path.dirname(os.path.abspath(__file__))
    for d in [here, "/judge/code", "/judge/code/judge", "/etc", "/usr", "/usr/local", "/", "/var/tmp", "/root", "/home"]:
        path = os.path.join(d, MARKER)
        try:
            with open(path, "w") as f:
                f.write("x")
        except OSError:
            continue
        raise RuntimeError(f"ESCAPED: wrote {path}")
    with open(MARKER, "w") as f:  # the scratch directory: fine
        f.write("x")
    return honest_add(x, y)
