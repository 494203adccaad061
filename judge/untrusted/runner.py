"""The untrusted worker: the only process that imports a submission.

It speaks the protocol in ``judge.shared.wire`` over two private file descriptors
taken from its stdin/stdout before anything else runs; the submission's own
prints land on stderr, which the judge drains and caps. It receives cases as
data (tensor storages, strides, scalars), calls the entry point, and sends back
the outputs and what it saw (kernel launches, torch operators, whether inputs
changed). It decides nothing: verdicts are the judge's.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import os
import sys
import time
from time import monotonic as _now  # bound before the file loads: its patching of time changes nothing here

from judge.shared import kernel_source, wire
from judge.untrusted.errors import GPU_ALLOWED, classify, text_of
from judge.untrusted.outputs import describe_outputs, kind_of
from judge.untrusted.worker_start import take_protocol_fds, warm_compiler

# --------------------------------------------------------------------------- loading


def load_submission(path: str, entry: str, arity: int):
    """Import the submission and find its entry point; returns (fn, None) or (None, error)."""
    name = os.path.basename(path)
    try:
        spec = importlib.util.spec_from_file_location("submission", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules["submission"] = module
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        return None, {
            "category": "compile",
            "type": type(exc).__name__,
            "message": f"{exc.msg} ({name}, line {exc.lineno})",
            "line": exc.lineno,
            "frames": [],
        }
    except ImportError as exc:
        missing = getattr(exc, "name", None)
        err = classify(exc, path)
        err["category"] = "compile"
        if missing:
            err["message"] = f"cannot import module '{missing}': it is not available to submissions"
        return None, err
    except BaseException as exc:  # noqa: BLE001 - anything at import is the submission's fault
        err = classify(exc, path)
        err["at_import"] = True
        return None, err

    fn = getattr(module, entry, None)
    expected = f"def {entry}({', '.join(_param_names(arity))})"
    if fn is None:
        return None, {
            "category": "compile",
            "type": "MissingEntryPoint",
            "message": f"{name} does not define '{entry}'; expected {expected}",
            "line": None,
            "frames": [],
        }
    if not callable(fn) or type(fn).__module__.startswith("triton"):
        return None, {
            "category": "compile",
            "type": "BadEntryPoint",
            "message": f"'{entry}' must be a plain Python function that launches your kernel; expected {expected}",
            "line": None,
            "frames": [],
        }
    try:
        inspect.signature(fn).bind(*range(arity))
    except TypeError:
        try:
            got = f"def {entry}{inspect.signature(fn)}"
        except (TypeError, ValueError):
            got = "an uninspectable callable"
        return None, {
            "category": "compile",
            "type": "WrongArity",
            "message": f"'{entry}' must accept {arity} positional arguments: expected {expected}, found {got}",
            "line": getattr(getattr(fn, "__code__", None), "co_firstlineno", None),
            "frames": [],
        }
    except ValueError:
        pass
    return fn, None


def _param_names(arity: int) -> list[str]:
    return [f"arg{i}" for i in range(arity)]


# --------------------------------------------------------------------------- cases


class Worker:
    def __init__(self, reader, out_fd, setup):
        import torch

        self.torch = torch
        self.reader = reader
        self.out_fd = out_fd
        self.nonce = setup["nonce"]
        self.path = os.path.realpath(setup["submission"])
        # The file's text before anything of it runs: what Triton compiles of its kernels is held against it
        # (integrity.rewired). A str, so the integrity snapshot of this object keeps its value too.
        try:
            self.source = kernel_source.read_source(self.path)
        except (OSError, UnicodeDecodeError):
            self.source = None
        self.device = setup["device"]
        self.fn = None
        self.kernels: dict = {}  # the file's kernels, checked for rewiring after each call (judge.untrusted.integrity)
        self.last = None  # (args, storages) of the last case, for a refill
        self.baseline: dict = {}
        self.bench = None  # judge.untrusted.bench.BenchState, made on the first timing request
        self.channel = _identity(out_fd)
        self.namespace = setup.get("namespace") or ""  # a factory problem's secret operator namespace
        self.arity = int(setup["arity"])  # the callable's arguments; a case may send more (a grad's cotangents)
        self.mode = None  # how the last case called the entry point (judge.untrusted.calls)

    def reply(self, message: dict, tensors=None):
        if _identity(self.out_fd) != self.channel:
            # The descriptor was pointed elsewhere (at /dev/null, say) and this reply would vanish while
            # replies written by the submission reach the judge: stop, so that the judge sees it.
            os._exit(wire.EXIT_CHANNEL_REDIRECTED)
        message["nonce"] = self.nonce
        err = message.get("error")
        if self.namespace and isinstance(err, dict):
            # The namespace is a secret of this worker: a message names it as <ns>, the same in every run.
            for key in ("message", "code"):
                if isinstance(err.get(key), str):
                    err[key] = err[key].replace(self.namespace, "<ns>")
        wire.send(self.out_fd, message, tensors)

    def build_args(self, msg, payloads):
        torch = self.torch
        args, storages = [], []
        it = iter(payloads)
        for spec in msg["args"]:
            kind = spec["kind"]
            if kind == "tensor":
                desc = spec["storage"]
                raw = next(it)
                storage = wire.tensor_from_wire(desc, raw).to(self.device)
                view = torch.as_strided(storage, spec["shape"], spec["strides"], spec["offset"])
                args.append(view)
                storages.append((storage, hashlib.sha256(raw).hexdigest()))
            elif kind == "scalar":
                args.append(spec["value"])
                storages.append(None)
            elif kind == "none":
                args.append(None)
                storages.append(None)
            else:
                raise ValueError(f"unknown argument kind {kind!r}")
        return args, storages

    def run_case(self, msg, payloads):
        """A new case: build its inputs, call the entry point, reply."""
        from judge.untrusted import calls

        t0 = _now()
        self.last = Worker.build_args(self, msg, payloads)
        self.mode = calls.make(self, msg.get("call"))
        return Worker.call(self, msg["id"], *self.last, since=t0)

    def refill(self, msg, payloads):
        """The same input memory, new values: a result cached by address must show."""
        if self.last is None:
            raise ValueError("refill before any case")
        t0 = _now()
        args, storages = self.last
        fresh = iter(zip(msg["tensors"], payloads))
        for i, entry in enumerate(storages):
            if entry is None:
                continue
            storage, _ = entry
            desc, raw = next(fresh)
            new = wire.tensor_from_wire(desc, raw)
            if new.numel() != storage.numel() or new.dtype != storage.dtype:
                raise ValueError("refill does not match the last case's storages")
            storage.copy_(new.to(storage.device))
            storages[i] = (storage, hashlib.sha256(raw).hexdigest())
        return Worker.call(self, msg["id"], args, storages, since=t0)

    def call(self, case_id, args, storages, since=None):
        """Call the entry point on the case's arguments and reply. ``since``: when the request's handling began
        (its inputs made from the bytes that came): the reply's ``phases`` split the worker's time into the
        inputs, the call (to the device's synchronize), and the work after it (the record, the outputs'
        description, the inputs' digests, the evidence); the judge's timeline shows them beside its own
        wait. Diagnostics only: nothing is decided on them."""
        import threading

        from judge.untrusted import calls, constants, guard, integrity, launches, own_ops, spawns, streams

        torch = self.torch
        cuda = self.device.startswith("cuda")
        if cuda:
            torch.cuda.synchronize()
        watch = None
        mode = self.mode or calls.make(self, None)
        # The callable's arguments; what the case sent after them is the judge's (a grad group's cotangents).
        args, extra = args[: self.arity], args[self.arity :]
        inputs = [(i, entry[0]) for i, entry in enumerate(storages[: self.arity]) if entry is not None]
        t_call = _now()
        t_after = None
        try:
            mode.prepare(args)  # the judge's work around the call (torch.compile), outside the watch
            threads_before = {t.ident for t in threading.enumerate()}
            with guard.watching(verify=True, inputs=inputs, device=self.device) as watch:
                result = mode.invoke(args)
            if cuda:
                # Device-wide: work queued on any stream is finished (and counted).
                torch.cuda.synchronize()
            t_after = _now()
            # The launch sequence for the judge's replay check (outside memory's bytes follow the outputs').
            trace, snapshots = watch.trace.finish(result)
            # The outputs as the call left them, read before the judge's work after it: a grad group's backward
            # is the file's code too, unwatched, and must not be able to rewrite the forward's answer.
            early = describe_outputs(result, copy=True) if mode.derives else None
            derived = mode.finish(result, args, extra)  # the judge's again (autograd), outside the watch
        except calls.ContractError as exc:
            Worker.reply(
                self,
                {
                    "type": "result",
                    "id": case_id,
                    "status": "error",
                    "error": exc.as_error(),
                    "evidence": _evidence(watch),
                },
            )
            return True
        except BaseException as exc:  # noqa: BLE001
            err = classify(exc, self.path)
            Worker.reply(
                self, {"type": "result", "id": case_id, "status": "error", "error": err, "evidence": _evidence(watch)}
            )
            return not err.get("fatal")

        outputs, tensors = early or describe_outputs(result)
        if derived:
            more, more_tensors = describe_outputs(list(derived))
            for out in more:
                out.pop("ptr_range", None)  # the judge's values (gradients): checked, not traced to a kernel
                out["derived"] = True
            outputs, tensors = outputs + more, tensors + more_tensors
        tensors = tensors + snapshots
        modified = []
        for i, entry in enumerate(storages):
            if entry is None:
                continue
            storage, digest = entry
            after = hashlib.sha256(wire.storage_to_wire(storage)).hexdigest()
            if after != digest:
                modified.append(i)
        evidence = _evidence(watch)
        evidence["threads_left"] = _new_threads(threads_before, self.path)
        evidence["tampered"] = (
            integrity.changed(self.baseline)
            + integrity.rewired(self.kernels, self.source, self.path)
            + constants.take()
            + own_ops.take_libraries()
            + streams.take()
        )
        evidence["started"] = spawns.take_events()
        evidence["compile"] = launches.compile_stats()
        for out in outputs:
            if out.get("ptr_range"):
                lo, hi = out.pop("ptr_range")
                out["kernel_wrote"] = any(a < hi and lo < b for a, b in watch.kernel_buffers)
                out["aliases_input"] = any(e is not None and _overlaps((lo, hi), e[0]) for e in storages)
        mode.amend(evidence, outputs)  # what a compiled graph says of launches and operators the watch missed
        done = _now()
        evidence["phases"] = {
            "inputs": round(max(0.0, t_call - (since if since is not None else t_call)), 6),
            "call": round(max(0.0, t_after - t_call), 6),
            "after": round(max(0.0, done - t_after), 6),
        }
        Worker.reply(  # the class's method: one set on the instance is reported (integrity), never used
            self,
            {
                "type": "result",
                "id": case_id,
                "status": "ok",
                "returned": kind_of(result),
                "outputs": outputs,
                "inputs_modified": modified,
                "evidence": evidence,
                "trace": trace,
            },
            tensors,
        )
        return True


def _identity(fd: int):
    """What a descriptor leads to (device, inode): a pipe's never changes, whatever number it has."""
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _started_text(started: dict) -> str:
    return " and ".join(f"{n} {kind}{'s' if n > 1 else ''}" for kind, n in sorted(started.items()))


def _new_threads(before: set, path: str) -> list[str]:
    """Threads started during the call that are still running, if the
    submission started them (directly, or through a thread pool)."""
    import threading

    found = []
    for t in threading.enumerate():
        if t.ident in before or not t.is_alive():
            continue
        target = getattr(t, "_target", None)
        while hasattr(target, "func"):  # functools.partial
            target = target.func
        code = getattr(target, "__code__", None) or getattr(getattr(type(t), "run", None), "__code__", None)
        where = os.path.realpath(code.co_filename) if code is not None else ""
        if where == path or "concurrent" in where or type(t).__module__ == "submission":
            found.append(t.name)
    return found


def _overlaps(rng, storage_tensor) -> bool:
    st = storage_tensor.untyped_storage()
    lo, hi = st.data_ptr(), st.data_ptr() + st.nbytes()
    return rng[0] < hi and lo < rng[1]


def _evidence(watch) -> dict:
    if watch is None:
        return {}
    return {
        "own_launches": dict(watch.own_launches),
        "other_launches": dict(watch.other_launches),
        "torch_ops": dict(watch.ops),
        "own_ops": dict(watch.own_ops),
        "threads_before": watch.threads_before,
    }


def _import_compiler(setup: dict) -> None:
    """torch.compile's modules, imported before the worker's baseline (importing them later would look like
    the submission's doing) and set up for a sandbox: Inductor compiles in this process, not a pool."""
    import torch._dynamo  # noqa: F401

    if not setup.get("interpret") and str(setup.get("device", "")).startswith("cuda"):
        import torch._functorch.config as functorch_config
        import torch._inductor.compile_fx  # noqa: F401
        import torch._inductor.config as inductor_config

        inductor_config.compile_threads = 1
        # No caches: a graph compiled from a cache skips the lowering whose graph is the call's evidence
        # (judge.untrusted.compiled), and nothing one submission compiled may be loaded for another.
        inductor_config.fx_graph_cache = False
        functorch_config.enable_autograd_cache = False


def _register(entry, namespace: str, path: str):
    """A factory's operator: (callable, None), or (None, the error) when registering failed."""
    from judge.untrusted import calls

    try:
        return calls.register(entry, namespace), None
    except TypeError as exc:
        if "register(namespace) must return" in text_of(exc):
            return None, {
                "category": "compile",
                "type": "BadEntryPoint",
                "message": text_of(exc),
                "line": None,
                "frames": [],
            }
        err = classify(exc, path)
    except BaseException as exc:  # noqa: BLE001 - the submission's registration failed
        err = classify(exc, path)
    err["at_register"] = True
    return None, err


def _bench(worker, msg) -> bool:
    """A timing request or a request for a timed call's outputs; False when the CUDA context is lost."""
    from judge.untrusted.bench import BenchState

    if worker.bench is None:
        worker.bench = BenchState(worker)
    try:
        if msg["type"] == "bench":
            Worker.reply(worker, worker.bench.run(msg))
        elif msg["type"] == "bench_trim":
            Worker.reply(worker, worker.bench.trim(msg))
        else:
            reply, tensors = worker.bench.check(msg)
            Worker.reply(worker, reply, tensors)
        return True
    except BaseException as exc:  # noqa: BLE001 - the submission raised while timed
        err = classify(exc, worker.path)
        kind = {"bench": "bench_result", "bench_trim": "bench_trimmed"}.get(msg["type"], "bench_outputs")
        Worker.reply(worker, {"type": kind, "id": msg.get("id"), "status": "error", "error": err})
        return not err.get("fatal")


# --------------------------------------------------------------------------- main


def prepare(reader) -> dict | None:
    """The worker's own start, before any submission: the settings that must precede torch's import (the
    interpreter flag, the device and its memory cap), then torch and Triton imported, Triton's launchers
    wrapped. Returns the "prepare" message (None when the first message is not one).

    A pooled worker (judge.pool) does this long before the judge knows which submission it will get; so
    nothing here may depend on the submission: it arrives afterwards in "setup" (its path, entry point,
    arity, threads)."""
    prep, _ = reader.recv(0)
    if prep.get("type") != "prepare":
        return None
    if prep.get("interpret"):
        os.environ["TRITON_INTERPRET"] = "1"
    else:
        os.environ.pop("TRITON_INTERPRET", None)

    import torch

    from judge.untrusted import determinism

    # Memory the submission allocates but never writes reads as NaN, so an
    # output element its kernel skipped cannot pass by luck.
    determinism.switch(torch, True)
    if prep.get("gpu_memory_mb") and str(prep.get("device", "")).startswith("cuda"):
        # PyTorch's allocator refuses more than the job's GPU memory: an out-of-memory error in this
        # worker (MLE for this job), not in the judge's or another job's process on the same GPU.
        total = torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, (int(prep["gpu_memory_mb"]) << 20) / total))
        GPU_ALLOWED[0] = min(total, int(prep["gpu_memory_mb"]) << 20)

    import triton  # noqa: F401

    from judge.untrusted import guard, integrity  # noqa: F401

    guard.install("", interpret=bool(prep.get("interpret")))  # the submission's file is named in "setup"
    warm_compiler(bool(prep.get("interpret")))
    return prep


def _exit_now() -> None:
    """Exit at once: every reply has been sent, and the interpreter's shutdown (torch's and Triton's, and any
    exit handler the submission registered) took more than the judge's two seconds of grace, after which it
    killed the worker: two seconds per worker, one after the other, before every speed run and at every end."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a stream the submission closed or replaced
            pass
    os._exit(0)


def main() -> int:

    from judge.shared import niceness
    from judge.untrusted import lockdown

    t0 = time.perf_counter()
    niceness.inherit()  # (a write to /proc/self/autogroup: before the lockdown, which forbids it)
    # Before anything else runs (every thread started later inherits it): no write to this process's memory
    # behind the dispatcher's back (/proc/self/mem, process_vm_writev, ptrace).
    lockdown.apply()
    proto_in, proto_out = take_protocol_fds()
    reader = wire.Reader(proto_in)
    prep = prepare(reader)
    if prep is None:
        return 2
    nonce = prep["nonce"]
    import torch
    import triton

    from judge.untrusted import constants, guard, integrity, spawns, streams, watch_state

    # Up to here nothing of any submission has run: a failure before this message is the judge's
    # environment's. A pooled worker waits here, for as long as it takes, for its one submission.
    wire.send(proto_out, {"type": "ready", "nonce": nonce})
    t_ready = time.perf_counter()
    setup, _ = reader.recv(0)
    if setup.get("type") != "setup" or setup.get("nonce") != nonce:
        return 2
    t1 = time.perf_counter()
    setup = {**prep, **setup}
    if setup.get("threads"):
        torch.set_num_threads(int(setup["threads"]))
    namespace = setup.get("namespace") or ""
    if setup.get("compiling"):
        _import_compiler(setup)
    guard.watch_file(setup["submission"], namespace=namespace, compiling=bool(setup.get("compiling")))
    worker = Worker(reader, proto_out, setup)
    from judge.untrusted import own_ops

    objects = {"worker": worker, "reader": reader, "guard state": watch_state._state, "own ops": own_ops._state}
    # Taken before the submission is imported, and compared after it.
    worker.baseline = integrity.snapshot(objects)
    constants.take_language()
    factory = setup.get("factory")
    fn, err = load_submission(worker.path, setup["entry"], 1 if factory else int(setup["arity"]))
    if err is None and factory:
        fn, err = _register(fn, namespace, worker.path)
    if err is None:
        worker.kernels = integrity.kernels_of(vars(sys.modules.get("submission") or object()))
        constants.watch(worker.path, worker.source, vars(sys.modules.get("submission") or object()))
        tampered = (
            integrity.changed(worker.baseline)
            + integrity.rewired(worker.kernels, worker.source, worker.path)
            + streams.take()
        )
        libraries = own_ops.take_libraries()
        started = spawns.take_events()
        if libraries:
            err = {
                "category": "rule",
                "type": "Tampering",
                "line": None,
                "frames": [],
                "message": "loading the submission (its import and register()) opened " + ", ".join(libraries),
            }
        elif tampered:
            err = {
                "category": "rule",
                "type": "Tampering",
                "line": None,
                "frames": [],
                "message": "importing the submission changed " + ", ".join(tampered),
            }
        elif started:
            err = {
                "category": "rule",
                "type": "Tampering",
                "line": None,
                "frames": [],
                "message": "importing the submission started " + _started_text(started),
            }
    hello = {
        "type": "hello",
        "status": "ok" if err is None else "error",
        "versions": {"python": sys.version.split()[0], "torch": torch.__version__, "triton": triton.__version__},
        "device_name": torch.cuda.get_device_name() if worker.device.startswith("cuda") else "cpu",
        # Where start-up time goes: importing torch and triton (and CUDA), then the submission.
        # (a pooled worker's "waited_seconds": how long it was ready before it was given this submission).
        "startup": {
            "imports_seconds": round(t_ready - t0, 4),
            "waited_seconds": round(t1 - t_ready, 4),
            "load_seconds": round(time.perf_counter() - t1, 4),
        },
    }
    if err is not None:
        hello["error"] = err
    else:
        worker.fn = fn
        worker.baseline = integrity.snapshot(objects)  # with the entry point; compared just above without it
    Worker.reply(worker, hello)
    if err is not None:
        return 0
    while True:
        msg, payloads = reader.recv(1 << 40)
        if msg.get("nonce") != nonce:
            return 2
        if msg.get("type") == "exit":
            _exit_now()
        if msg.get("type") in ("bench", "bench_check", "bench_trim"):
            if not _bench(worker, msg):
                return 0
            continue
        if msg.get("type") in ("case", "refill"):
            try:
                handler = Worker.run_case if msg["type"] == "case" else Worker.refill
                alive = handler(worker, msg, payloads)
            except BaseException as exc:  # noqa: BLE001 - e.g. an output object that breaks on inspection
                # (Its traceback is the worker's, not the submission's: not printed where the submission's prints go.)
                err = classify(exc, worker.path)
                err["message"] = f"while the worker handled the result: {err['message']}"
                Worker.reply(worker, {"type": "result", "id": msg.get("id"), "status": "error", "error": err})
                alive = not err.get("fatal")
            if not alive:
                return 0  # the CUDA context is gone; the judge starts a new worker
