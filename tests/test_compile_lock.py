"""judge.untrusted.compile_lock: a submission's workers that share a kernel cache compile a variant once
(issue 13). Two real processes: the same variant waits for the first; another variant does not."""

import json
import os
import subprocess
import sys

HOLD = r"""
import json, sys, time
from judge.untrusted import compile_lock

class Kernel:  # what the lock reads of a JITFunction: its source hash
    cache_key = "kernel-source-hash"

with compile_lock.held(Kernel(), (sys.argv[1], "signature", 0), {}):
    start = time.monotonic()
    time.sleep(1.0)
    print(json.dumps([start, time.monotonic()]))
"""


def _two(tmp_path, key_a, key_b):
    env = dict(os.environ, TRITON_CACHE_DIR=str(tmp_path))
    procs = [
        subprocess.Popen([sys.executable, "-c", HOLD, key], env=env, stdout=subprocess.PIPE, text=True)
        for key in (key_a, key_b)
    ]
    spans = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    (a0, a1), (b0, b1) = sorted(spans)
    return a1, b0


def test_the_same_variant_is_compiled_by_one_worker_at_a_time(tmp_path):
    first_end, second_start = _two(tmp_path, "key-1", "key-1")
    assert second_start >= first_end - 0.01
    assert (tmp_path / "judge-compile-locks").is_dir()


def test_other_variants_compile_side_by_side(tmp_path):
    first_end, second_start = _two(tmp_path, "key-1", "key-2")
    assert second_start < first_end


def test_no_cache_directory_no_lock(tmp_path, monkeypatch):
    from judge.untrusted import compile_lock

    monkeypatch.setattr(compile_lock, "_cache_dir", lambda: None)
    with compile_lock.held(type("K", (), {"cache_key": "h"})(), ("k",), {}):
        pass


def test_a_gpu_worker_computes_tritons_build_key_before_any_submission_and_the_interpreter_does_not(monkeypatch):
    # judge.untrusted.worker_start.warm_compiler, called by every worker's and replay worker's prepare: the key Triton's
    # first compile computes (its sources and libtriton hashed, 0.7 s here), taken while a pooled worker waits.
    from triton.runtime import cache

    from judge.untrusted import worker_start

    calls = []
    monkeypatch.setattr(cache, "triton_key", lambda: calls.append(1) or "key")
    worker_start.warm_compiler(True)
    assert calls == []
    worker_start.warm_compiler(False)
    assert calls == [1]
