"""The replay worker: a recorded launch sequence, run alone on fresh inputs.

``python -m judge.untrusted.replay`` is started by the judge (judge.replay)
through the same sandbox backend as the submission's worker, with the same
mounts and limits, and speaks the same protocol (judge.shared.wire). It never
imports the submission. It reads the file's source and compiles, from it,
only the top-level ``@triton.jit`` functions, ``@triton.constexpr_function``
helpers and constants (judge.shared.kernel_source; defined by
judge.untrusted.kernel_namespace), in a namespace that holds nothing but
``triton``, ``triton.language``, ``math`` and a few harmless built-ins: in
the interpreter a kernel body is Python, and this namespace is all it can
reach by name.

For each request (judge.untrusted.record_replay) it allocates fresh memory:
the inputs hold the values the judge sent (drawn from a new secret seed),
memory from outside the call holds the bytes the worker recorded, and every
allocation is redone with the same NaN fill the worker uses. It then redoes
the recorded operators and launches in order, and returns the outputs, with,
for each, the last event that changed its memory. A failure is reported as
data (which event, what error); the judge decides what it means.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import traceback

from judge.shared import niceness, wire
from judge.untrusted.kernel_namespace import load_kernels
from judge.untrusted.record_replay import CompilePass, Replay, cached_kernels
from judge.untrusted.worker_start import take_protocol_fds, warm_compiler


def compile_checker(path: str):
    """The GPU compiler's front end, in a child process without the interpreter (judge.untrusted.frontend),
    for checking interpreted launches; None where it cannot be started (said on stderr)."""
    try:
        from judge.untrusted.frontend import Checker

        return Checker(path)
    except Exception as exc:  # noqa: BLE001 - no front end (e.g. a Triton without the NVIDIA backend): not checked
        print(f"replay: the compile check is off: {type(exc).__name__}: {exc}", file=sys.stderr)
        return None


def _yield_cores(seconds: float):
    """Import at the lowest CPU priority (judge.sandbox.base.yields_cores says why): this session's autogroup
    at nice 19. The function that gives the inherited priority back (judge.shared.niceness), which main()
    calls once the imports are done; a timer calls it after ``seconds`` at the latest. None when the priority
    could not be lowered. Giving it back goes on trying for seconds (the kernel's rate limit on autogroup
    writes), since staying low on a busy host could starve this worker."""
    if not niceness.set_session(19, tries=3):
        return None
    lock = threading.Lock()
    state = {"low": True}
    inherited = max(0, niceness.own())

    def back() -> None:
        with lock:
            if state["low"]:
                state["low"] = not niceness.set_session(inherited, tries=50)

    timer = threading.Timer(max(0.0, float(seconds)), back)
    timer.daemon = True
    timer.start()
    return back


def main() -> int:
    t0 = time.perf_counter()
    proto_in, proto_out = take_protocol_fds()
    reader = wire.Reader(proto_in)
    # The same start as the submission's worker (judge.untrusted.runner): "prepare" (interpreter flag,
    # device) before torch is imported, "ready", then "setup" naming the file, which a pooled replay
    # worker (judge.pool) gets only when the judge hands it one.
    prep, _ = reader.recv(0)
    if prep.get("type") != "prepare":
        return 2
    nonce = prep["nonce"]
    interpret = bool(prep.get("interpret"))
    back = _yield_cores(prep.get("yield_seconds", 2.0)) if prep.get("yield_cores") is True else None
    if back is None:
        niceness.inherit()
    if interpret:
        os.environ["TRITON_INTERPRET"] = "1"
    else:
        os.environ.pop("TRITON_INTERPRET", None)
    import torch

    from judge.untrusted import determinism

    # Fresh memory reads as NaN, as in the worker: an allocation is replayed with the same fill.
    determinism.switch(torch, True)
    import triton

    warm_compiler(interpret)
    if back is not None:
        back()  # imported: the normal priority again, before any replay is asked of this worker
    from judge.untrusted import lockdown

    lockdown.apply()  # (after the priority is back: that is a write to /proc/self/autogroup)

    def reply(message: dict, tensors=None):
        message["nonce"] = nonce
        wire.send(proto_out, message, tensors)

    reply({"type": "ready"})
    t_ready = time.perf_counter()
    setup, _ = reader.recv(0)
    if setup.get("type") != "setup" or setup.get("nonce") != nonce:
        return 2
    setup = {**prep, **setup}
    if setup.get("threads"):
        torch.set_num_threads(int(setup["threads"]))
    t1 = time.perf_counter()
    path = os.path.realpath(setup["submission"])
    device = setup.get("device", "cpu")
    try:
        ns, kernels, skipped = load_kernels(path, interpret)
    except BaseException as exc:  # noqa: BLE001 - e.g. an unreadable file: said in the hello
        reply(
            {
                "type": "hello",
                "status": "error",
                "versions": {},
                "device_name": "?",
                "error": {"category": "runtime", "type": type(exc).__name__, "message": str(exc)[:2000]},
            }
        )
        return 0
    for line in skipped:
        print(f"replay: not defined: {line}", file=sys.stderr)
    # In the interpreter a kernel body is Python and runs whatever Python does; on a GPU it must compile.
    frontend = compile_checker(path) if interpret and setup.get("compile_check", True) else None
    reply(
        {
            "type": "hello",
            "status": "ok",
            "versions": {"python": sys.version.split()[0], "torch": torch.__version__, "triton": triton.__version__},
            "device_name": torch.cuda.get_device_name() if device.startswith("cuda") else "cpu",
            "startup": {
                "imports_seconds": round(t_ready - t0, 4),
                "waited_seconds": round(t1 - t_ready, 4),
                "load_seconds": round(time.perf_counter() - t1, 4),
            },
        }
    )
    while True:
        msg, payloads = reader.recv(1 << 40)
        if msg.get("nonce") != nonce:
            return 2
        if msg.get("type") == "exit":
            os._exit(0)  # nothing to tear down: skip the interpreter's (torch's) slow shutdown
        if msg.get("type") == "compile" and not interpret:
            t_c = time.perf_counter()
            try:
                result = CompilePass(ns, kernels, device, path).compile_all(msg)
            except BaseException as exc:  # noqa: BLE001 - a malformed request: the replay proper says it
                result = {"status": "ok", "compiled": 0, "failed": 1}
                print(f"replay: compile pass: {type(exc).__name__}: {exc}", file=sys.stderr)
            reply({"type": "compiled", "id": msg.get("id"), **result, "seconds": round(time.perf_counter() - t_c, 4)})
            continue
        if msg.get("type") != "replay":
            return 2
        before = cached_kernels(ns, kernels) if not interpret else None
        try:
            result, tensors = Replay(ns, kernels, device, path, frontend).run(msg, payloads)
        except BaseException as exc:  # noqa: BLE001 - a malformed request: said, not fatal
            traceback.print_exc()
            result, tensors = Replay._failed(-1, "record", type(exc).__name__, str(exc))
        after = cached_kernels(ns, kernels) if before is not None else None
        if after is not None and result.get("status") == "ok":
            result["compiled"] = max(0, after - before)  # the kernels this replay compiled (none, after the pass)
        reply({"type": "replay_result", "id": msg.get("id"), **result}, tensors)
        del tensors
        if device.startswith("cuda") and torch.cuda.is_initialized() and torch.cuda.memory_reserved() > 1 << 30:
            # A replayed bench shape's memory, cached: other judges' work on a shared GPU needs it (as
            # judge.kit.release_cached in the judge).
            torch.cuda.empty_cache()
        if device.startswith("cuda") and result.get("status") == "error" and "CUDA error" in str(result):
            return 0  # the context is gone: the judge starts a fresh replay worker


if __name__ == "__main__":
    sys.exit(main())
