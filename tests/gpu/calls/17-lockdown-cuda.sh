#!/usr/bin/env bash
# Does CUDA start under the worker's lockdown (judge.untrusted.lockdown)? Each variant in a fresh process:
# none, landlock, seccomp, both (as the worker does: lockdown first), after (CUDA's context first, then both,
# then a torch matmul, a Triton kernel and CUDA from a new thread). With strace where there is one: the calls
# refused under landlock. Results in $OUT/results/lockdown.txt.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out="${OUT:-gpu-out}/results"; mkdir -p "$out"
cat > /tmp/ld_kernel.py <<'K'
import triton, triton.language as tl
@triton.jit
def add1(x, n, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(x + o, tl.load(x + o, mask=o < n) + 1, mask=o < n)
K
cat > /tmp/ld_probe.py <<'P'
import sys, threading, traceback
sys.path.insert(0, "/tmp")
from judge.untrusted import lockdown
mode = sys.argv[1]
try:
    import torch
    if mode == "after":
        torch.cuda.init(); torch.ones(1, device="cuda")
    libc, arch = lockdown._libc(), __import__("platform").machine()
    said = {}
    if mode in ("landlock", "both", "after"):
        said["landlock"] = lockdown._landlock(libc, arch)
    if mode in ("seccomp", "both", "after"):
        said["seccomp"] = lockdown._seccomp(libc, arch)
    a = torch.randn(256, 256, device="cuda"); b = (a @ a).sum().item()
    from ld_kernel import add1
    x = torch.zeros(1000, device="cuda"); add1[(4,)](x, 1000, B=256); torch.cuda.synchronize()
    r = {}
    t = threading.Thread(target=lambda: r.update(v=float((torch.ones(8, device="cuda") * 2).sum())))
    t.start(); t.join()
    print(mode, "OK", said, float(x.sum()), r)
except Exception as exc:
    print(mode, "FAILED", type(exc).__name__, str(exc)[:300])
P
{ for m in none landlock seccomp both after; do PYTHONPATH=. timeout 120 python3 /tmp/ld_probe.py $m 2>&1 | tail -2; done
  if command -v strace >/dev/null; then
    echo "== strace, landlock: refused calls"
    PYTHONPATH=. timeout 120 strace -f -e trace=openat,open,ioctl,ptrace,process_vm_readv,process_vm_writev \
      python3 /tmp/ld_probe.py landlock 2>&1 | grep -E "EACCES|EPERM|ENOTSUP|EOPNOTSUPP" | sort | uniq -c | sort -rn | head -20
  else echo "no strace"; fi
  uname -r; } 2>&1 | tee "$out/lockdown.txt"
tar -czf "${OUT:-gpu-out}/results.tar.gz" -C "${OUT:-gpu-out}" results && rm -rf "$out"
