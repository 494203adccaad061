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

import pytest

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
    from judge.untrusted import guard, spawns
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
    spawns.take_events()
    sub.spawn()
    out["spawn"] = spawns.take_events()
    print(json.dumps(out))
""")


def test_the_watch_records_kernels_operators_and_threads(tmp_path):
    sub = tmp_path / "mine.py"
    sub.write_text(SUBMISSION)
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, str(sub), str(ROOT)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["launch"]["own"] == {"add_kernel": 1} and got["launch"]["right"]
    # empty_like and view are allowed; the add and sum inside the grid lambda are the file's own operators
    assert set(got["launch"]["ops"]) == {"add", "sum", "_local_scalar_dense"}, got["launch"]  # int() reads it out
    assert got["cheat"] == {"own": {}, "ops": {"add": 1}}
    assert got["spawn"] == {"thread": 1}


RECORD_DRIVER = textwrap.dedent("""
    import json, os, sys
    sys.path.insert(0, sys.argv[2])
    import torch
    from judge.untrusted import guard, watch_state
    guard.install(sys.argv[1], interpret=True)
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True
    x, y = torch.randn(100), torch.randn(100)
    python_off = torch.DispatchKeySet(torch.DispatchKey.Python)

    def excluded():
        with torch.ExcludeDispatchKeyGuard(python_off):
            return x + y

    def redispatched():
        return torch.ops.aten.add.Tensor.redispatch(torch.DispatchKeySet(torch.DispatchKey.CPU), x, y)

    def per_element():
        return x.clone().map_(y, lambda a, b: a + b)

    def left_off():
        torch._C._dispatch_tls_set_dispatch_key_excluded(torch.DispatchKey.Python, True)

    def wrapper_work():  # what an honest wrapper does, a debugging print included
        out = torch.empty_like(x).view(10, 10).t().contiguous().reshape(-1)
        table = torch.tensor([1.0, 2.0], dtype=torch.float16)
        print(out[:3], table, file=open(os.devnull, "w"))
        return torch.cat([out, x.to(torch.float32)]).clone()

    out = {"record_ok": watch_state._state.record_ok}
    for fn in (excluded, redispatched, per_element, left_off, wrapper_work):
        try:
            with guard.watching(verify=True) as w:
                fn()
        finally:
            torch._C._dispatch_tls_set_dispatch_key_excluded(torch.DispatchKey.Python, False)
        out[fn.__name__] = dict(w.ops)
    print(json.dumps(out))
""")


def test_the_operator_record_sees_what_the_watch_was_kept_from(tmp_path):
    """PyTorch's profiler around a judged call: operators that ran with Python dispatch off, redispatched below
    it or per element in Python are named; an honest wrapper's allocation, views, copies and prints are not."""
    sub = tmp_path / "mine.py"
    sub.write_text("x = 1\n")
    proc = subprocess.run(
        [sys.executable, "-c", RECORD_DRIVER, str(sub), str(ROOT)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "USDT" not in proc.stderr  # the profiler prints nothing (it would count as the submission's output)
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["record_ok"]
    assert got["excluded"] == {"add (run with the operator watch switched off)": 1}, got
    assert got["redispatched"] == {"add (redispatched below the operator watch)": 1}, got
    assert got["per_element"] == {"map_ (a Python function per element)": 1}, got
    assert any("still off when the call returned" in k for k in got["left_off"]), got
    assert got["wrapper_work"] == {}, got


def test_integrity_compares_the_workers_own_objects():
    """A method set on an instance shadows its class's; a changed descriptor or secret is a changed value."""
    from judge.untrusted import integrity

    class Channel:
        def __init__(self):
            self.fd, self.nonce, self.last = 5, "secret", None

        def reply(self, message):
            return message

    worker = Channel()
    before = integrity.snapshot({"worker": worker})
    worker.last = ("a new case",)  # data that changes with every case is not compared
    assert integrity.changed(before) == []
    worker.reply = lambda message: {}
    worker.fd = 7
    assert integrity.changed(before) == ["worker.fd", "worker.reply"]


# Delete a function from its module, then put another there (here the same code again): the old one freed, the
# new one may be allocated at its address and have its id(). Run in a process of its own (it rebinds the
# judge's own functions). Prints the names replaced and the names integrity.changed reported.
REPLACED_IN_PLACE = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import torch
    from judge.untrusted import integrity, outputs
    before = integrity.snapshot()
    Function = type(lambda: 0)
    replaced = []
    for module in (integrity, outputs):
        for name in [n for n, v in vars(module).items() if type(v) is Function and not n.startswith("__")]:
            old = getattr(module, name)
            code, scope = old.__code__, old.__globals__
            del old
            delattr(module, name)
            setattr(module, name, Function(code, scope, name))
            replaced.append(f"{module.__name__}.{name}")
    print(json.dumps({"replaced": replaced, "reported": integrity.changed(before)}))
""")


def test_integrity_sees_a_function_replaced_at_its_own_address():
    # The snapshot holds what it recorded, so no replacement can take a recorded object's id (without that,
    # 14 of the 16 replaced here went unreported, three runs out of three).
    root = Path(__file__).resolve().parents[1]
    r = subprocess.run(
        [sys.executable, "-c", REPLACED_IN_PLACE, str(root)], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout)
    assert len(got["replaced"]) >= 10 and set(got["replaced"]) <= set(got["reported"]), got


# The watch, the worker's errors and its timing live in several modules: each is held whole, as the one module
# they came from was, and so is each module's binding of the watch's shared state. Run in a process of its own
# (it rebinds the judge's own functions).
SPLIT_MODULES_HELD = textwrap.dedent("""
    import json, os, sys
    sys.path.insert(0, sys.argv[1])
    os.environ["TRITON_INTERPRET"] = "1"
    import torch, triton
    from judge.untrusted import (errors, guard, integrity, launches, op_record, operators, samples, spawns,
                                 watch_state, worker_start)
    guard.install("", interpret=True)
    before = integrity.snapshot({"guard state": watch_state._state})
    Function = type(lambda: 0)
    replaced = []
    for space in (launches, operators, op_record, spawns, watch_state, errors, worker_start, samples,
                  samples.Sampling):
        label = space.__name__ if isinstance(space, type(sys)) else f"{space.__module__}.{space.__qualname__}"
        for name in [n for n, v in vars(space).items() if type(v) is Function and not n.startswith("__")]:
            setattr(space, name, lambda *a, **k: None)
            replaced.append(f"{label}.{name}")
    for space in (guard, launches, operators, op_record, spawns):
        space._state = object()
        replaced.append(f"{space.__name__}._state")
    print(json.dumps({"replaced": replaced, "reported": integrity.changed(before)}))
""")


def test_integrity_holds_every_module_the_watch_and_the_timing_are_split_into():
    r = subprocess.run(
        [sys.executable, "-c", SPLIT_MODULES_HELD, str(ROOT)], capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout)
    assert len(got["replaced"]) >= 60, got
    assert sorted(set(got["replaced"]) - set(got["reported"])) == [], got


# changed() compares without a fresh snapshot (the same object: nothing computed); its oracle here is the
# straightforward way, a fresh snapshot held against the old one name by name. Each mutation in a process of
# its own (they rebind torch's and the judge's own objects).
CHANGED_ORACLE = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import torch, triton, time
    from judge.untrusted import integrity, outputs, guard

    class Worker:
        def __init__(self):
            self.fd, self.nonce = 5, "n"
        def reply(self, m):
            return m

    worker = Worker()
    before = integrity.snapshot({"worker": worker})

    def oracle():
        now = integrity.snapshot(before["<objects>"])
        meta = ("<objects>", "<kept>")
        found = {n for n in before if n not in meta and (n in now and now[n] != before[n] or n not in now)}
        labels = tuple(f"{label}." for label in before["<objects>"])
        found |= {n for n, v in now.items() if n not in meta and n.startswith(labels) and n not in before
                  and v[0] == "object"}
        return sorted(found)

    which = sys.argv[2]
    if which == "function":
        outputs.kind_of = lambda r: "tensor"
    elif which == "deleted":
        del outputs.describe_outputs
    elif which == "method":
        torch.Tensor.detach = lambda self: self
    elif which == "identity":
        time.perf_counter = lambda: 0.0
    elif which == "setting":
        torch.backends.cuda.matmul.allow_tf32 = not torch.backends.cuda.matmul.allow_tf32
    elif which == "instance":
        worker.reply = lambda m: {}
        worker.fd = 7
        worker.extra = print
    elif which == "dynamo":
        torch.manual_seed = torch._disable_dynamo(torch.manual_seed)  # what importing Dynamo does: no change
    elif which == "wrapped-other":
        torch.manual_seed = torch._disable_dynamo(lambda s: None)
    print(json.dumps({"changed": integrity.changed(before), "oracle": oracle()}))
""")


@pytest.mark.parametrize(
    "which", ["nothing", "function", "deleted", "method", "identity", "setting", "instance", "dynamo", "wrapped-other"]
)
def test_integrity_changed_says_what_a_fresh_snapshot_would(which):
    root = Path(__file__).resolve().parents[1]
    r = subprocess.run(
        [sys.executable, "-c", CHANGED_ORACLE, str(root), which], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout)
    assert got["changed"] == got["oracle"], got
    assert bool(got["changed"]) == (which not in ("nothing", "dynamo")), got


LIGHT_DRIVER = textwrap.dedent("""
    import json, os, sys
    os.environ["TRITON_INTERPRET"] = "1"
    sys.path.insert(0, sys.argv[2])
    import torch
    from judge.untrusted import determinism, guard, watch_state
    out = {}
    determinism.switch(torch, True)
    guard.install(sys.argv[1], interpret=True)
    x = torch.randn(100)
    with guard.watching(verify=True) as w:
        torch.add(x, 1)
    out["before"] = {"ops": dict(w.ops), "record_ok": watch_state._state.record_ok,
                     "deterministic": torch.are_deterministic_algorithms_enabled(),
                     "fill": torch.utils.deterministic.fill_uninitialized_memory,
                     "fresh_is_nan": bool(torch.empty(8).isnan().all()),
                     "dynamo": "torch._dynamo" in sys.modules, "inductor": "torch._inductor.config" in sys.modules}
    saved = determinism.switch(torch, False)
    out["off"] = [torch.are_deterministic_algorithms_enabled(), torch.utils.deterministic.fill_uninitialized_memory]
    determinism.restore(torch, saved)
    import torch._dynamo, torch._inductor.config  # what a compiling problem (judge.untrusted.compiled) loads
    determinism.sync(torch)
    with guard.watching(verify=True) as w:
        torch.add(x, 1)
    out["after"] = {"ops": dict(w.ops), "inductor_deterministic": torch._inductor.config.deterministic,
                    "deterministic": torch.are_deterministic_algorithms_enabled()}
    print(json.dumps(out))
""")


def test_the_watch_and_the_deterministic_mode_load_neither_dynamo_nor_inductor(tmp_path):
    """A worker's start: the deterministic mode with its NaN fill, and the watch's dispatch mode, without
    importing Dynamo or Inductor (1.5-1.8 s each on 2 cores); the watch records the same with them loaded,
    and Inductor's flag follows PyTorch's once it is."""
    sub = tmp_path / "mine.py"
    sub.write_text("x = 1\n")
    proc = subprocess.run(
        [sys.executable, "-c", LIGHT_DRIVER, str(sub), str(ROOT)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["before"] == {
        "ops": {"add": 1},
        "record_ok": True,
        "deterministic": True,
        "fill": True,
        "fresh_is_nan": True,
        "dynamo": False,
        "inductor": False,
    }, got
    assert got["off"] == [False, False]
    assert got["after"] == {"ops": {"add": 1}, "inductor_deterministic": True, "deterministic": True}, got
