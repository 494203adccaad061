"""The worker's watch on its own (judge.untrusted.guard), in a fresh interpreter process.

What it must record as evidence: launches of the file's own kernels and of
kernels defined elsewhere, PyTorch operators that compute (and not those that
only allocate, view or copy), operators run from the file's callbacks inside
a launch, and threads the file starts. The rules that judge this evidence are
tested in tests/test_judgement.py; here, only the recording.
"""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SUBMISSION = textwrap.dedent("""
    import threading
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)

    def launch(x, y):
        out = torch.empty_like(x)                      # allocation: allowed
        v = out.view(-1)                               # a view: allowed
        add_kernel[lambda meta: (triton.cdiv(x.numel() + 0 * int(torch.add(x, 1).sum()), meta["BLOCK"]),)](
            x, y, v, x.numel(), BLOCK=64)              # the grid lambda computes: watched
        return out

    def cheat(x, y):
        return torch.add(x, y)

    def spawn():
        t = threading.Thread(target=lambda: None)
        t.start()
        t.join()
""")

DRIVER = textwrap.dedent("""
    import json, os, sys
    os.environ["TRITON_INTERPRET"] = "1"
    sys.path.insert(0, sys.argv[2])
    import torch, triton, importlib.util
    from judge.untrusted import guard
    guard.install(sys.argv[1], interpret=True)
    spec = importlib.util.spec_from_file_location("submission", sys.argv[1])
    sub = importlib.util.module_from_spec(spec); spec.loader.exec_module(sub)
    x, y = torch.randn(100), torch.randn(100)
    out = {}
    with guard.watching() as w:
        r = sub.launch(x, y)
    out["launch"] = {"own": dict(w.own_launches), "ops": dict(w.ops), "right": bool(torch.allclose(r, x + y))}
    with guard.watching() as w:
        sub.cheat(x, y)
    out["cheat"] = {"own": dict(w.own_launches), "ops": dict(w.ops)}
    guard.take_events()
    sub.spawn()
    out["spawn"] = guard.take_events()
    print(json.dumps(out))
""")


def test_the_watch_records_kernels_operators_and_threads(tmp_path):
    sub = tmp_path / "mine.py"
    sub.write_text(SUBMISSION)
    proc = subprocess.run([sys.executable, "-c", DRIVER, str(sub), str(ROOT)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["launch"]["own"] == {"add_kernel": 1} and got["launch"]["right"]
    # empty_like and view are allowed; the add and sum inside the grid lambda are the file's own operators
    assert set(got["launch"]["ops"]) == {"add", "sum", "_local_scalar_dense"}, got["launch"]  # int() reads it out
    assert got["cheat"] == {"own": {}, "ops": {"add": 1}}
    assert got["spawn"] == {"thread": 1}
