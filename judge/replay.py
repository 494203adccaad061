"""The replay check: a call's recorded launches, replayed alone on fresh inputs, must compute the answer.

Whatever the worker says about a call is evidence from inside the
submission's process, and code in that process can forge it: hand a kernel
that does nothing the output while Python fills it in (``Tensor.map_``), or
do the arithmetic on bytes and copy the result in. So the judge does not take
the worker's word. The worker records the call's launch sequence
(judge.untrusted.trace: the file's kernels with their grids, arguments and
options, and the allocations and copies around them); the judge checks that
record like any other input (judge.replay_input.validate), then has it
replayed by a second sandboxed process that never imports the submission and
compiles only the file's ``@triton.jit`` functions from their source
(judge.untrusted.replay), on fresh memory holding fresh inputs from a new
secret seed. The replayed outputs must pass the same output check as the
case (judge.rules.outputs against judge.expected's answers for the fresh
inputs); if they do not, the verdict is RJ, with a message that names the
output and the launch that last wrote it.

What is decided here and in judge.replay_verdict, and what it means:

* a record that does not add up (a kernel the file does not define at top
  level, memory referenced beyond its end, inputs of other sizes) is RJ: the
  worker recorded what happened, so a record that could not have happened
  was forged;
* a kernel launched from outside the file, or given an object no Triton
  kernel can take, is RJ: the replay can run only the file's kernels on
  tensors and values;
* memory from outside the call (made before it, or outside PyTorch) is
  replayed with the bytes it held when the call first used it; over a budget
  (judge.shared.tracing.snapshot_budget) it is RJ ("data from outside your
  kernels reached ...");
* a record the worker cut short (more than judge.shared.tracing.MAX_EVENTS
  launches and copies), a kernel argument of one of Triton's own types the
  replay does not rebuild, and a replay that ran out of time or memory are
  :class:`Skipped`: what that means for a test case is judge.proofs' (the
  case is run again, or gets the verdict of the limit), for a timed call the
  speed run's.

The replay runs on every passing case of the test groups (judge.proofs), and in the speed run on the timed call whose
outputs are checked at every shape (:meth:`Replayer.check_bench`: the bench
worker records its timed calls in judge.untrusted.trace's deferred form, and
the replay worker makes the fresh inputs itself from judge.shared.bench_inputs
and a new seed, so that large inputs need not cross the pipe).
"""

from __future__ import annotations

import contextlib
import secrets
import tempfile
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

from judge import expected, kit, replay_verdict, starvation, timeline
from judge.channel import WorkerChannel, WorkerDied, WorkerStartFailed
from judge.replay_input import NOTE, encode, fresh_inputs, validate
from judge.replies import parsers, records
from judge.sandbox.base import REPLAY_MODULE
from judge.shared import kernel_source, wire
from judge.verdicts import Outcome, Verdict

PREFIX = "the replay check"  # every RJ of this layer starts with it


@dataclass(frozen=True)
class Skipped:
    """A case whose record was not replayed: the note for the report, and whether the call itself is why.

    A group none of whose passing cases could be replayed for a reason of the
    call's own (``counts``) is RJ (judge.session): otherwise a submission could
    opt out of the check, say by launching more than MAX_EVENTS times.
    """

    note: str
    counts: bool = True
    # The replay itself ran out of time, memory or output (not the record's doing): the speed run, which
    # replays one timed call per shape, lets such a shape go with a note (judge.timing.verify); a test
    # case gets the verdict its kernels earned alone (judge.proofs).
    limits: bool = False
    # of a limit: "timeout", "memory", "output", "run" (the run's own limit came first), or "starved" (the host's
    # other work, not the kernels, used the time: judge.starvation)
    reason: str = ""


# --------------------------------------------------------------------------- the replay worker


class Replayer:
    """The replay worker of one judging run: started once (at the first replay, or early with prestart)."""

    def __init__(
        self,
        problem,
        job,
        backend,
        *,
        threads: int | None,
        golden_device: str,
        compute_lock=None,
        seed: int | None = None,
    ):
        self.problem = problem
        self.seed = seed  # the run's: the cases' fresh inputs derive from it (fresh_inputs)
        # Held around the judge's own work for a replay (fresh inputs, golden answers), never around the wait
        # for the replay worker: the speed run shares it with its output checks, which run beside its replays
        # in another thread, so that the speed run's own GPU work (inputs, golden answers) stays one
        # computation at a time.
        self._compute = compute_lock if compute_lock is not None else contextlib.nullcontext()
        self.backend = backend
        self.threads = threads
        self.golden_device = golden_device
        self.file = job.submission.name
        try:
            self.kernels = set(kernel_source.kernel_names(kernel_source.read_source(job.submission)))
        except (OSError, UnicodeDecodeError):
            self.kernels = set()
        self.scratch = Path(tempfile.mkdtemp(prefix="judge-replay-"))
        # Its own kernel cache: the submission's workers write theirs, and the replay must compile the
        # file's kernels from their source, never load a binary a submission's worker left there.
        cache = job.cache.with_name(job.cache.name + "-replay") if job.cache is not None else None
        self.job = replace(job, module=REPLAY_MODULE, scratch=self.scratch, cache=cache)
        self.channel: WorkerChannel | None = None
        self._time_left = None  # during a test case's replay: the seconds left of the run's limit (check)
        self.ready = False
        self.closed = False  # for good (close): no worker is started again, say by a replay that was waiting
        self._life = threading.Lock()  # a start against close
        self.replay_id = 0
        # Where the replays' time goes, the judge's side of it: making the fresh inputs (bench replays), the
        # golden answers, waiting for the replay worker beyond them (its compiles, its run, the outputs'
        # transfer), judging what came back.
        self.timing = {
            "replays": 0,
            "replay_seconds": 0.0,
            "replay_inputs_seconds": 0.0,
            "replay_golden_seconds": 0.0,
            "replay_wait_seconds": 0.0,
            "replay_judge_seconds": 0.0,
        }
        self.compiles_ahead = self.job.device == "cuda" and not self.job.interpret  # (the interpreter compiles nothing)
        if self.compiles_ahead:
            # The compile pass ahead of each replay (precompile): its seconds, the kernels it compiled, and
            # the kernels the replays still compiled as they ran, with the GPU taken (0 when the pass did all).
            self.timing.update(replay_compile_seconds=0.0, replay_precompiled=0, replay_compiled_in_run=0)

    def prestart(self) -> None:
        """Start the worker now (it imports torch and Triton while the judge goes on); wait for it later. One
        that dies at once is started again by the first replay, which says what failed (IE)."""
        try:
            self._spawn()
        except (WorkerStartFailed, WorkerDied):
            self.stop()

    def _spawn(self) -> None:
        with self._life:
            if self.closed:
                raise WorkerStartFailed("the replay worker was closed: its judging run is over")
            if self.channel is None:
                self.channel = WorkerChannel(self.backend, self.job)
                self.channel.begin(submission_entry="", arity=0, threads=self.threads)
                self.ready = False

    def _ensure(self) -> None:
        self._spawn()
        if not self.ready:
            t0 = time.monotonic()
            hello = self.channel.finish_start()
            self.timing["replay_start_wait_seconds"] = time.monotonic() - t0
            timeline.add(
                "wait for the replay worker's start",
                t0,
                time.monotonic(),
                pooled=self.channel.pooled,
                imports_seconds=hello.startup.get("imports_seconds"),
            )
            if self.channel.pooled:
                self.timing["replay_pooled"] = 1
            if not hello.ok:
                raise WorkerStartFailed(
                    f"it could not read the file's kernels: {hello.error.message if hello.error else '?'}"
                )
            self.ready = True

    def wait_ready(self) -> None:
        """Wait until the prestarted worker is ready; a start that failed is reported by the next check."""
        try:
            self._ensure()
        except (WorkerStartFailed, WorkerDied):
            self.stop()

    def release(self) -> None:
        """Ask the replay worker to exit, without waiting (stop or close waits); one never used is killed."""
        if self.channel is not None and not self.ready:
            self.channel.proc.kill()
        elif self.channel is not None:
            try:
                self.channel.send_case({"type": "exit"}, [])
            except WorkerDied:
                pass

    def stop(self) -> None:
        if self.channel is not None:
            self.channel.close()
            self.channel = None
            self.ready = False

    def close(self) -> None:
        import shutil

        with self._life:
            self.closed = True
        self.stop()
        shutil.rmtree(self.scratch, ignore_errors=True)

    # ------------------------------------------------------------------ one case

    def check(
        self,
        params: dict,
        inputs: list,
        reply: records.CaseResult,
        device: str,
        shared=contextlib.nullcontext,
        time_left=None,
    ) -> Outcome | Skipped | None:
        """Replay a passing case's record on fresh inputs: an RJ (or IE) Outcome, Skipped, or None (it computes the
        answer). ``shared()`` is held around the replay's GPU work, not its compile pass (:meth:`precompile`).
        ``time_left()``: seconds left of the run's limit, which no wait for the replay worker goes past."""
        self._time_left = time_left
        try:
            self.precompile(reply.trace)
            with shared():
                return self._counted(self._check, params, inputs, reply, device)
        finally:
            self._time_left = None

    def check_bench(
        self, params: dict, specs: list, outputs: records.BenchOutputs, device: str, shared=contextlib.nullcontext
    ) -> Outcome | Skipped | None:
        """Replay a timed call of the speed run (judge.timing.verify) on fresh bench inputs, as :meth:`check`
        does a case: RJ (or IE) Outcome, Skipped, or None. A wrong answer carries ``case`` = {"bench_seed": S}:
        the speed run asks the submission's worker for a call on the same inputs (a bench request with seed S)."""
        self.precompile(outputs.trace)
        with shared():
            return self._counted(self._check_bench, params, specs, outputs, device)

    def precompile(self, trace: records.Trace | None) -> None:
        """On a GPU, before the replay takes the GPU: the replay worker compiles the record's kernels without
        running them (judge.untrusted.record_replay.CompilePass), so that the replay, which holds the GPU shared,
        spends that time on the GPU's work alone. A compile is CPU work; held shared, it kept another judge's
        speed run waiting (a judge times only once the cases and replays in flight are done).

        Nothing is decided here: whatever goes wrong (a record that does not add up, a worker that dies, a
        launch it cannot compile ahead) is left to the replay, which starts a fresh worker if need be and
        compiles what is missing. The pass has the replay's own time limit."""
        if trace is None or not self.compiles_ahead:
            return
        t0 = time.monotonic()
        try:
            record, _ = encode(trace)
            self._ensure()
            self.replay_id += 1
            with timeline.span("replay: compile pass"):
                self.channel.send_case({"type": "compile", "id": self.replay_id, "trace": record}, [])
                timeout = self._timeout()[0]
                done = self.channel.receive(
                    parsers.parse_compile_reply,
                    timeout=timeout,
                    max_bytes=1 << 16,
                    stretch=self._stretch(timeout),
                    expect_id=self.replay_id,
                )
            self.timing["replay_precompiled"] += max(0, done.compiled)
        except (WorkerStartFailed, WorkerDied):
            self.stop()  # the replay starts a fresh one, and says what fails
        finally:
            self._spent("replay_compile_seconds", t0)

    def _counted(self, check, *args):
        t0 = time.monotonic()
        try:
            found = check(*args)
            if isinstance(found, Outcome) and found.verdict is Verdict.RJ:
                # One prefix for every way the replay rejects a call, so a report (and a corpus file's
                # expect line) can name the layer whichever of its checks fired.
                found = replace(found, message=f"{PREFIX}: {found.message}")
            return found
        finally:
            self.timing["replays"] += 1
            self.timing["replay_seconds"] += time.monotonic() - t0

    def _check_bench(self, params, specs, outputs, device):
        import torch

        from judge.shared import bench_inputs

        trace = outputs.trace
        if trace is None:
            return Outcome(
                Verdict.RJ, "the worker sent no record of the timed call's launches (a forged or tampered reply)"
            )
        base = secrets.randbits(62)
        seed = bench_inputs.call_seed(base, 0)  # call 0 of a bench request with seed ``base``
        # The judge's own copy of the fresh inputs, for the golden model; the replay worker makes the same.
        with self._compute:
            t0 = time.monotonic()
            fresh = bench_inputs.make(specs, seed, self.golden_device)
            self._spent("replay_inputs_seconds", t0)
        sizes = {i: a.untyped_storage().nbytes() for i, a in enumerate(fresh) if isinstance(a, torch.Tensor)}
        found = validate(trace, self.kernels, sizes, device, self.file)
        if found is not None:
            verdict, message = found
            return Skipped(message) if verdict == "note" else Outcome(Verdict.RJ, message, {"replay": "record"})
        frames = [
            ({"dtype": "uint8", "shape": [len(s.snapshot)]}, s.snapshot)
            for s in trace.storages
            if s.origin == "outside"
        ]
        dev = "cuda" if device.startswith("cuda") else "cpu"
        found = self._replay(
            trace,
            frames,
            sum(sizes.values()),
            {"bench": {"specs": specs, "seed": seed}},
            lambda: expected.answers(self.problem, fresh, params.get("dtype", "float32"), self.golden_device, params),  # noqa: F821
            outputs,
            dev,
        )
        if isinstance(found, Outcome) and found.details.get("replay") == "wrong" and not found.details.get("outside"):
            found = replace(found, case={"bench_seed": base})
        del fresh
        with self._compute:
            kit.release_cached()  # a bench shape's inputs and float64 answers (judge.kit.release_cached)
        return found

    def _check(self, params, inputs, reply, device):
        trace = reply.trace
        if trace is None:
            return Outcome(Verdict.RJ, "the worker sent no record of the call's launches (a forged or tampered reply)")
        sizes = {
            i: a.storage_numel() * a.values.element_size()
            for i, a in enumerate(inputs)
            if isinstance(a, kit.TensorInput)
        }
        found = validate(trace, self.kernels, sizes, device, self.file)
        if found is not None:
            verdict, message = found
            return Skipped(message) if verdict == "note" else Outcome(Verdict.RJ, message, {"replay": "record"})
        with kit.computing_on(self.golden_device):
            drawn = fresh_inputs(self.problem, params, inputs, self.seed)
        if drawn is None:
            return Skipped(f"{NOTE}: this problem's inputs change layout with their seed", counts=False)
        fresh_params, fresh = drawn
        frames = []
        for s in trace.storages:
            if s.origin == "input":
                raw = wire.storage_to_wire(fresh[s.arg].storage())
                frames.append(({"dtype": "uint8", "shape": [len(raw)]}, raw))
            elif s.origin == "outside":
                frames.append(({"dtype": "uint8", "shape": [len(s.snapshot)]}, s.snapshot))
        input_bytes = sum(len(raw) for _, raw in frames)
        found = self._replay(
            trace,
            frames,
            input_bytes,
            {},
            lambda: expected.for_inputs(self.problem, fresh, params, self.golden_device),
            reply,
            device,
        )
        if isinstance(found, Outcome) and found.details.get("replay") == "wrong" and not found.details.get("outside"):
            # Wrong on the fresh inputs; the session runs them in the submission's worker too (a kernel
            # that is wrong on some values is WA, not RJ: see judge.session.Session._execute).
            found = replace(found, case=fresh_params)
        return found

    def _replay(self, trace, frames, input_bytes: int, extra: dict, answers_for, reply, device):
        """Send the record to the replay worker, compute the golden answers meanwhile, judge what comes back."""
        record, _ = encode(trace)
        timeout, by_run = self._timeout()
        if timeout <= 0:
            return Skipped(f"{NOTE}: the run's time limit was reached", limits=True, reason="run")
        try:
            self._ensure()
        except (WorkerStartFailed, WorkerDied) as exc:
            self.stop()
            return Outcome(Verdict.IE, f"the replay worker could not start: {exc}")
        try:
            self.replay_id += 1
            self.channel.send_case({"type": "replay", "id": self.replay_id, "trace": record, **extra}, frames)
            # The judge's answers for the fresh inputs, while the replay runs.
            with self._compute:
                t0 = time.monotonic()
                answers = answers_for()
                t0 = self._spent("replay_golden_seconds", t0)
            timeout, by_run = self._timeout()  # (the golden answers took some of it)
            result = self.channel.receive(
                parsers.parse_replay_reply,
                timeout=max(timeout, 0.1),
                max_bytes=8 * input_bytes + (1 << 20),
                stretch=self._stretch(timeout),
                expect_id=self.replay_id,
            )
            self._spent("replay_wait_seconds", t0)
        except WorkerDied as died:
            self.stop()
            if died.reason in ("timeout", "memory", "output", "starved"):
                why = {
                    "timeout": "did not finish in time",
                    "memory": "ran out of memory",
                    "output": "printed more than the limit",
                    "starved": "was kept from a core by the host's other work",
                }[died.reason]
                reason = "run" if died.reason == "timeout" and by_run else died.reason
                return Skipped(f"{NOTE}: the replay {why}", limits=True, reason=reason)
            return Outcome(
                Verdict.RJ,
                "replayed alone on fresh inputs, your recorded launches "
                f"{'crashed the replay' if died.reason == 'crash' else 'broke the replay'}: "
                f"{died.detail}",
                {"replay": "died"},
            )
        if not result.ok:
            self.stop()  # a kernel that failed may have left the worker unusable (a CUDA error): start afresh
        if result.ok and result.compiled >= 0 and self.compiles_ahead:
            self.timing["replay_compiled_in_run"] += result.compiled
        t0 = time.monotonic()
        try:
            return replay_verdict.outcome(self.problem, trace, reply, result, answers, device)
        finally:
            self._spent("replay_judge_seconds", t0)

    def _timeout(self) -> tuple[float, bool]:
        """(seconds a wait for the replay worker may take now, whether the run's limit is what bounds it): twice
        the case's limit, never past the run's (a kernel that stalls only when replayed runs no longer)."""
        own = 2 * self.job.limits.case_seconds
        left = self._left()
        if left is not None and left < own:
            return left, True
        return own, False

    def _stretch(self, timeout: float) -> float:
        """How far the host's starving the replay worker may move a wait's deadline (judge.starvation): never
        past the run's limit."""
        left = self._left()
        return starvation.STRETCH if left is None else max(1.0, min(starvation.STRETCH, left / max(timeout, 0.1)))

    def _left(self) -> float | None:
        return self._time_left() if self._time_left is not None else None

    def _spent(self, key: str, since: float) -> float:
        """Add the seconds since ``since`` to timing[key]; now (the next part's start)."""
        now = time.monotonic()
        self.timing[key] += now - since
        return now
