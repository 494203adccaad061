# Looks for the judge: its environment, its process (command line, memory), and
# any secret in the variables it was given.
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


ALLOWED = {"PATH", "HOME", "TMPDIR", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED",
           "PYTHONSAFEPATH", "PYTHONHASHSEED", "LANG", "TRITON_CACHE_DIR", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
           "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "PYTHONNOUSERSITE", "TRITON_INTERPRET",
           "LD_LIBRARY_PATH", "CUDA_HOME", "TRITON_PTXAS_PATH", "TRITON_LIBCUDA_PATH", "HOSTNAME",
           "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "LC_ALL", "TERM",
           "PWD", "TORCHINDUCTOR_CACHE_DIR",  # set by bwrap's --chdir and by torch itself
           "KINETO_LOG_LEVEL",  # the worker's own, on a GPU: quiets the profiler of the judge's second clock
           "HYPOTHESIS_NO_PLUGINS"}  # set by the judge package itself as the worker imports it (judge/__init__.py)


def add(x, y):
    extra = sorted(set(os.environ) - ALLOWED)
    if extra:
        raise RuntimeError(f"ESCAPED: the environment carries {extra}")
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ")
        except OSError:
            continue
        if b"judge submit" in cmd or b"judge selftest" in cmd or b"pytest" in cmd or b"judge test" in cmd:
            raise RuntimeError(f"ESCAPED: sees the judge process {pid}: {cmd[:80]!r}")
        try:
            open(f"/proc/{pid}/mem", "rb").read(1)
            raise RuntimeError(f"ESCAPED: reads the memory of process {pid}")
        except OSError:
            pass
    return honest_add(x, y)
