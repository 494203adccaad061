"""A worker cannot write its own memory behind PyTorch's back (judge.untrusted.lockdown), in any backend.

Against the real kernel: Landlock refuses every open of a file beneath /proc for writing, seccomp refuses
process_vm_writev, process_vm_readv and ptrace. The hostile file sandbox/hostile/accepted/writes_own_memory.py
tries each name of /proc/self/mem and process_vm_writev on itself (a write that lands raises ESCAPED, RTE);
contained, it adds honestly (AC). The process backend, which is no sandbox, is held to it as well.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from judge.options import Options
from judge.problems import find_problem
from judge.sandbox import get_backend
from judge.session import Session

ROOT = Path(__file__).resolve().parent.parent
PROBE = ROOT / "sandbox" / "hostile" / "accepted" / "writes_own_memory.py"

CHILD = r"""
import ctypes, os, sys
from judge.untrusted import lockdown
print("applied", lockdown.apply())
buf = bytearray(8)
try:
    open("/proc/self/mem", "r+b")
    print("proc write open")
except PermissionError:
    print("proc write refused")
open("/proc/self/mem", "rb").close()
print("proc read ok")
with open(os.path.join(sys.argv[1], "f"), "w") as f:
    f.write("x")
print("scratch write ok")
libc = ctypes.CDLL(None, use_errno=True)
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
src, dst = ctypes.create_string_buffer(b"ab"), ctypes.create_string_buffer(2)
l, r = iovec(ctypes.cast(src, ctypes.c_void_p), 2), iovec(ctypes.cast(dst, ctypes.c_void_p), 2)
n = libc.process_vm_writev(os.getpid(), ctypes.byref(l), 1, ctypes.byref(r), 1, 0)
print("pvw", n, ctypes.get_errno(), dst.raw == b"\0\0")
"""


def test_the_lockdown_refuses_writes_to_proc_and_process_vm_writev_and_nothing_else(tmp_path):
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    lines = out.stdout.splitlines()
    assert out.returncode == 0, out.stderr
    assert lines[0] == "applied {'landlock': '', 'seccomp': ''}", lines  # this machine's kernel has both
    assert "proc write refused" in lines and "proc read ok" in lines and "scratch write ok" in lines, lines
    assert "pvw -1 1 True" in lines, lines  # EPERM, nothing written


def test_where_cuda_is_in_reach_the_worker_is_not_locked_down(tmp_path):
    """CUDA did not start under the lockdown (every GPU worker IE): where the driver's control device is in
    reach, apply() says why it did not lock down, and a write to /proc/self/mem still opens."""
    fake = tmp_path / "nvidiactl"
    fake.write_text("")
    child = CHILD.replace(
        "from judge.untrusted import lockdown\n",
        f"from judge.untrusted import lockdown\nlockdown.NVIDIA_CONTROL = {str(fake)!r}\n",
    )
    out = subprocess.run(
        [sys.executable, "-c", child, str(tmp_path)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    lines = out.stdout.splitlines()
    assert out.returncode == 0, out.stderr
    assert "not applied" in lines[0] and "proc write open" in lines, lines


@pytest.mark.corpus
@pytest.mark.parametrize("backend", ["process", "bwrap", "docker"])
def test_a_file_that_writes_its_own_memory_is_contained_in_every_backend(backend):
    why = get_backend(backend).unavailable()
    if why is not None:
        pytest.skip(f"sandbox {backend} unavailable: {why}")
    options = Options(
        sandbox=backend,
        seed=1,
        device="cpu",
        interpret=True,
        static_scan=False,
        speed=False,
        workers=1,
        group="small-ragged",
    )
    report = Session(find_problem("93"), PROBE, options).run()
    assert report.verdict.value == "AC", f"{report.verdict.value}: {report.message}"
