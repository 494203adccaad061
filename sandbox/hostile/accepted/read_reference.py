# Searches the whole file system for the problem's reference solution, its golden
# model and specs, and any other submission.
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


WANTED = ("093-vector-add.py", "golden.py", "problem.toml", "masked_block.py", "selftest.py")
# Other packages have files with these names too (a "golden.py" in an
# optimisation library turned up on the GPU machine): only the judge's count.
OURS = (b"make_inputs", b"entry_point", b"add_kernel", b"# expect", b"judge")


_walked = False  # once per worker: every case of a group runs in the same process, sees the same files


def add(x, y):
    global _walked
    if not _walked:
        _walk()
        _walked = True
    return honest_add(x, y)


def _walk():
    me = os.path.abspath(__file__)
    for root, dirs, files in os.walk("/"):
        dirs[:] = [d for d in dirs if os.path.join(root, d) not in ("/proc", "/sys", "/dev")]
        for name in files:
            path = os.path.join(root, name)
            if name in WANTED and path != me:
                try:
                    with open(path, "rb") as f:
                        head = f.read(1 << 16)
                except OSError:
                    continue
                if any(mark in head for mark in OURS):
                    raise RuntimeError(f"ESCAPED: read {path}")
