# Writes its own memory behind PyTorch's back, the way a red team set a flag tensor its kernel read (issue 40):
# through /proc/self/mem (and every other name of it: /proc/PID/mem, a thread's, /proc/thread-self), and with
# process_vm_writev on itself. The worker's lockdown (judge.untrusted.lockdown: Landlock, seccomp) refuses both
# in every backend, the process backend included; a write that lands raises ESCAPED. Contained, it adds honestly.
import array
import ctypes
import os

import torch
import triton
import triton.language as tl


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n, sx, sy, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * sx, mask=mask) + tl.load(y_ptr + offs * sy, mask=mask), mask=mask)


def _names():
    pid, tid = os.getpid(), getattr(os, "gettid", os.getpid)()
    return ["/proc/self/mem", f"/proc/{pid}/mem", f"/proc/self/task/{tid}/mem", f"/proc/{pid}/task/{tid}/mem",
            "/proc/thread-self/mem"]


def _through_proc():
    target = array.array("b", [0] * 8)
    address = target.buffer_info()[0]
    for name in _names():
        try:
            with open(name, "r+b", buffering=0) as mem:
                mem.seek(address)
                mem.write(b"\x01")
        except OSError:
            continue
        if target[0] == 1:
            raise RuntimeError(f"ESCAPED: wrote its own memory through {name}")


def _process_vm_writev():
    libc = ctypes.CDLL(None, use_errno=True)

    class iovec(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]

    src = ctypes.create_string_buffer(b"\x01" * 8)
    dst = ctypes.create_string_buffer(8)
    local = iovec(ctypes.cast(src, ctypes.c_void_p), 8)
    remote = iovec(ctypes.cast(dst, ctypes.c_void_p), 8)
    if libc.process_vm_writev(os.getpid(), ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) == 8:
        raise RuntimeError("ESCAPED: wrote its own memory with process_vm_writev")


def add(x, y):
    _through_proc()
    _process_vm_writev()
    n = x.numel()
    out = torch.empty(n, dtype=x.dtype, device=x.device)
    _add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, x.stride(0), y.stride(0), BLOCK=1024)
    return out
