"""One judging run: submission in, Report out.

Data flows one way: the session draws cases (Hypothesis), builds their inputs,
sends them to the worker, computes the golden and naive answers while the
worker runs, checks the reply, and turns the outcomes into group results and a
verdict. This process never imports the submission.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from hypothesis import HealthCheck, Phase, Verbosity, example, given, seed, settings
from hypothesis.errors import HypothesisException

from judge import checker, kit, precheck, staticscan
from judge.cases import canonical, derive_seed, expand_examples, params_strategy
from judge.problems import Group, Problem
from judge.sandbox import Job, Limits, choose_auto, get_backend
from judge.verdicts import GroupResult, Outcome, Report, Verdict, worst
from judge.channel import WorkerChannel, WorkerDied, WorkerStartFailed

BF16_NOTE = ("bfloat16 was not tested: Triton's interpreter computes bfloat16 on raw bits, "
             "so its results would be wrong for any kernel; it is tested on a GPU")
DEATH_VERDICTS = {
    "timeout": Verdict.TLE,
    "memory": Verdict.MLE,
    "output": Verdict.OLE,
    "crash": Verdict.RTE,
    "protocol": Verdict.RJ,
}
SHORT_CIRCUIT = {Verdict.RJ, Verdict.TLE, Verdict.MLE, Verdict.OLE}
ERROR_VERDICTS = {"compile": Verdict.CE, "memory": Verdict.MLE, "runtime": Verdict.RTE, "rule": Verdict.RJ}


@dataclass
class Options:
    device: str = "cpu"  # where tensors live: "cuda" or "cpu"
    interpret: bool = True  # run kernels in Triton's interpreter
    sandbox: str = "process"
    seed: int = 0
    quick: bool = False  # `judge test`: edge examples and a few drawn cases
    group: str | None = None  # only this group
    case: dict | None = None  # only this case (needs group)
    gpu: int | None = None
    max_examples: int | None = None  # override the spec's per-group count
    shrink_seconds: float = 60.0
    threads: int | None = 1
    limits: dict = field(default_factory=dict)  # overrides of the spec's limits
    static_scan: bool = True  # reject tampering found in the source (off only to test the sandboxes)
    speed: bool = True  # measure speed after every group passed (GPU only; submit --no-speed turns it off)
    bench: dict = field(default_factory=dict)  # overrides of the problem's [bench] settings
    log: object = None  # callable(str) for progress lines on stderr (the GPU lock's wait), or None


class CaseFailed(Exception):
    def __init__(self, params: dict, outcome: Outcome):
        super().__init__(outcome.message)
        self.params = params
        self.outcome = outcome


def limits_for(problem: Problem, options: Options) -> Limits:
    spec = dict(problem.limits)
    spec.update({k: v for k, v in options.limits.items() if v is not None})
    interp = options.interpret
    return Limits(
        case_seconds=float(spec.get("case_seconds_interpret" if interp else "case_seconds",
                                    spec.get("case_seconds", 60))),
        run_seconds=float(spec.get("run_seconds_interpret" if interp else "run_seconds",
                                   spec.get("run_seconds", 900))),
        memory_mb=int(spec.get("memory_mb", 8192)),
        output_bytes=int(spec.get("output_kb", 1024)) << 10,
        processes=int(spec.get("processes", 256)),
        startup_seconds=float(spec.get("startup_seconds", 60)),
    )


class Session:
    def __init__(self, problem: Problem, submission: Path, options: Options):
        self.problem = problem
        self.submission = Path(submission)
        self.options = options
        self.limits = limits_for(problem, options)
        self.notes: list[str] = []
        if options.sandbox == "auto":
            self.backend, why = choose_auto(options.device)
            if why:
                self.notes.append(why)
        else:
            self.backend = get_backend(options.sandbox)
        # The judge computes its answers on the same GPU the worker was given.
        self.golden_device = f"cuda:{options.gpu or 0}" if options.device == "cuda" else "cpu"
        self.worker: WorkerChannel | None = None
        self.worker_info: dict = {}
        self.printed: list[str] = []
        self.case_counter = 0
        self.started = 0.0
        self.scratch: Path | None = None
        self._cache: dict[str, Outcome] = {}
        self._frozen: str | None = None  # after a worker death, only that case is replayed
        self._refilled: set[str] = set()  # groups whose first passing case was re-run in place
        # Where the time goes (the report's "timing"): worker starts, cases, golden model, compiles, speed.
        self.timing = {"worker_starts": 0, "worker_start_seconds": 0.0, "cases": 0, "worker_seconds": 0.0,
                       "golden_seconds": 0.0, "kernels_compiled": 0, "compile_seconds": 0.0}
        self._compile_seen = {"compiled": 0, "compile_seconds": 0.0}

    # ------------------------------------------------------------------ entry

    def run(self) -> Report:
        self.started = time.monotonic()
        reason, _line = precheck.check_source(self.submission)
        if reason:
            return self._report(Verdict.CE, reason, [])
        if self.options.static_scan:
            findings = staticscan.scan(self.submission.read_text())
            if findings:
                more = f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""
                return self._report(Verdict.RJ, f"not allowed in a submission: {findings[0].message()}{more}", [],
                                    {"findings": [{"line": f.line, "code": f.code, "why": f.why} for f in findings]})
        self.scratch = Path(tempfile.mkdtemp(prefix="judge-run-"))
        try:
            failure = self._start_worker()
            if failure is not None:
                return self._report(failure.verdict, failure.message, [], failure.details)
            groups = []
            self._groups_started = time.monotonic()
            for g in self._selected_groups():
                if groups and groups[-1].verdict in SHORT_CIRCUIT:
                    # Groups grow in size: a case that hung, or ran out of memory
                    # or output, here would do so there too, at a full limit each;
                    # and after a rule violation the score is 0 whatever follows.
                    last = groups[-1].verdict
                    groups.append(GroupResult(g.name, g.about, g.points, False, 0, last,
                                              skipped=f"not run: an earlier group ended with {last.value}"))
                    continue
                groups.append(self._run_group(g))
            verdict = worst(g.verdict for g in groups)
            message = next((f"{g.name}: {g.message}" for g in groups if g.verdict is verdict and not g.passed),
                           "all tests passed")
            self.timing["tests_seconds"] = round(time.monotonic() - self._groups_started, 3)
            speed, failed = self._speed(verdict)
            if failed is not None:
                verdict, message = failed
            return self._report(verdict, message, groups, speed=speed)
        finally:
            self._stop_worker()
            shutil.rmtree(self.scratch, ignore_errors=True)

    def _selected_groups(self) -> list[Group]:
        if self.options.group is None:
            return list(self.problem.groups)
        return [g for g in self.problem.groups if g.name == self.options.group]

    # ------------------------------------------------------------------ worker

    def _job(self) -> Job:
        return Job(submission=self.submission, scratch=self.scratch, device=self.options.device,
                   interpret=self.options.interpret, limits=self.limits, gpu=self.options.gpu)

    def _start_worker(self) -> Outcome | None:
        """Start a worker and load the submission; an Outcome if that failed."""
        t0 = time.monotonic()
        try:
            self.worker = WorkerChannel(self.backend, self._job())
            hello = self.worker.start(submission_entry=self.problem.entry_point, arity=self.problem.arity,
                                      threads=self.options.threads)
            self.timing["worker_starts"] += 1
            self.timing["worker_start_seconds"] += time.monotonic() - t0
            self._compile_seen = {"compiled": 0, "compile_seconds": 0.0}
        except WorkerStartFailed as exc:
            self._stop_worker()
            return Outcome(Verdict.IE, str(exc))
        except WorkerDied as died:
            self._stop_worker()
            verdict = DEATH_VERDICTS[died.reason]
            text = died.detail
            if died.reason == "timeout":
                text = f"no answer within {self.limits.startup_seconds:g} s (killed)"
            return Outcome(verdict, f"while loading the submission: {text}")
        self.worker_info = {"versions": hello.get("versions", {}), "device_name": hello.get("device_name")}
        if hello.get("status") != "ok":
            err = hello.get("error", {})
            self._stop_worker()
            return Outcome(ERROR_VERDICTS.get(err.get("category"), Verdict.RTE), _error_text(err),
                           {"error": err})
        return None

    def _stop_worker(self) -> None:
        """Close the worker, dead or alive: kill what is left, free its pipes and cgroup."""
        if self.worker is not None:
            self.worker.close()
            self._collect_output()
            self.worker = None

    def _collect_output(self) -> None:
        if self.worker is not None:
            text = self.worker.output_text()
            if text:
                self.printed.append(text)

    # ------------------------------------------------------------------ cases

    def _over_time(self) -> bool:
        return time.monotonic() - self.started > self.limits.run_seconds

    def run_case(self, group: Group, params: dict) -> Outcome:
        key = f"{group.name}|{canonical(params)}"
        if key in self._cache:
            return self._cache[key]
        if self._frozen is not None:
            # A worker died on an earlier case of this group; shrinking it
            # further would cost a full timeout or restart per try.
            return Outcome(Verdict.AC, "not run")
        if self._over_time():
            outcome = Outcome(Verdict.TLE, f"the whole run exceeded its limit of {self.limits.run_seconds:g} s")
            self._frozen = key
            self._cache[key] = outcome
            return outcome
        outcome = self._execute(group, params)
        self._cache[key] = outcome
        if outcome.details.get("worker_died"):
            self._frozen = key
        return outcome

    def _execute(self, group: Group, params: dict) -> Outcome:
        if self.worker is None:
            failure = self._start_worker()
            if failure is not None:
                return failure
        inputs, wire_args, payloads, input_bytes = self._inputs(params)
        self.case_counter += 1
        message = {"type": "case", "id": self.case_counter, "args": wire_args}
        outcome, first = self._exchange(message, payloads, inputs, params, input_bytes)
        if not outcome.passed or not self._wants_refill(group, params):
            return outcome
        # The same input memory with new values: the answer must change with it.
        params2 = dict(params, seed=derive_seed("refill", params["seed"]))
        inputs2, _, payloads2, _ = self._inputs(params2)
        self.case_counter += 1
        outcome2, second = self._exchange({"type": "refill", "id": self.case_counter}, payloads2, inputs2,
                                          params2, input_bytes)
        if outcome2.passed:
            return outcome
        same = (first is not None and second is not None and len(first) == len(second)
                and all(a.shape == b.shape and torch.equal(a.nan_to_num(), b.nan_to_num())
                        for a, b in zip(first, second)))
        if same or outcome2.details.get("no_kernel"):
            return Outcome(Verdict.RJ, "when the same input memory held new values, the entry point returned its "
                                       "previous answer without computing it (a result cached by address)")
        outcome2.message = f"on a second call with new values in the same memory: {outcome2.message}"
        return outcome2

    def _wants_refill(self, group: Group, params: dict) -> bool:
        """The first passing case of each group, and one drawn case in eight."""
        if group.name not in self._refilled:
            self._refilled.add(group.name)
            return True
        return derive_seed("refill?", canonical(params)) % 8 == 0

    def _inputs(self, params: dict):
        inputs = self.problem.golden.make_inputs(dict(params), kit.generator(params["seed"]))
        wire_args, payloads, input_bytes = [], [], 0
        for arg in inputs:
            if isinstance(arg, kit.TensorInput):
                storage = arg.storage()
                desc, raw = _storage_payload(storage)
                wire_args.append({"kind": "tensor", "storage": desc, "shape": list(arg.values.shape),
                                  "strides": arg.strides(), "offset": arg.offset})
                payloads.append((desc, raw))
                input_bytes += len(raw)
            elif arg is None:
                wire_args.append({"kind": "none"})
            elif isinstance(arg, (bool, int, float)):
                wire_args.append({"kind": "scalar", "value": arg})
            else:
                raise TypeError(f"make_inputs returned an unsupported argument {type(arg).__name__}")
        return inputs, wire_args, payloads, input_bytes

    def _exchange(self, message, payloads, inputs, params, input_bytes):
        """Send a case (or refill), make the expected answers meanwhile, judge the reply."""
        max_bytes = 8 * input_bytes + (1 << 20)
        try:
            t0 = time.monotonic()
            self.worker.send_case(message, payloads)
            expected = self._expected(inputs, params)
            t1 = time.monotonic()
            reply, tensors = self.worker.receive_result(timeout=self.limits.case_seconds, max_bytes=max_bytes)
            self.timing["cases"] += 1
            self.timing["golden_seconds"] += t1 - t0
            self.timing["worker_seconds"] += time.monotonic() - t1
            self._count_compiles(reply)
        except WorkerDied as died:
            self._stop_worker()
            verdict = DEATH_VERDICTS[died.reason]
            text = died.detail
            details = {"worker_died": died.reason}
            if died.reason == "timeout":
                text = f"no answer within {self.limits.case_seconds:g} s (killed)"
            if died.reason == "crash" and self.options.interpret and any(
                    sig in text for sig in ("SIGSEGV", "SIGABRT", "SIGBUS")):
                details["hint"] = ("the interpreter does not check bounds: a kernel that loads or stores outside "
                                   "its tensors (a missing mask, or another tensor's strides) corrupts memory")
            return Outcome(verdict, text, details), None
        outcome, got = self._evaluate(reply, tensors, expected)
        if reply.get("status") == "error" and reply.get("error", {}).get("fatal"):
            self._stop_worker()  # a CUDA error poisons the context: start afresh
        return outcome, got

    def _count_compiles(self, reply) -> None:
        """Kernels the worker compiled so far (one per constexpr combination) and the time in those launches."""
        ev = reply.get("evidence") if isinstance(reply.get("evidence"), dict) else {}
        stats = ev.get("compile") if isinstance(ev.get("compile"), dict) else None
        if not stats:
            return
        n, secs = int(stats.get("compiled", 0)), float(stats.get("compile_seconds", 0.0))
        self.timing["kernels_compiled"] += max(0, n - self._compile_seen["compiled"])
        self.timing["compile_seconds"] += max(0.0, secs - self._compile_seen["compile_seconds"])
        self._compile_seen = {"compiled": n, "compile_seconds": secs}

    # ------------------------------------------------------------------ speed

    def _speed(self, verdict: Verdict):
        """The speed section, and (verdict, message) when the speed run itself failed the submission."""
        from judge.timing.score import SpeedScore

        opts = self.options
        base = {"scored": False, "points": 0, "max_points": self.problem.speed_points}
        if self.problem.speed_points <= 0:
            return {**base, "reason": "this problem has no speed points"}, None
        if opts.quick:
            return {**base, "reason": "not measured by a quick test: submit measures it"}, None
        if opts.interpret or opts.device != "cuda":
            return {**base, "reason": "speed is not scored in interpreter mode: kernels run one program at a "
                                      "time on the CPU, so their times say nothing about a GPU (submit on a "
                                      "machine with a GPU to score it)"}, None
        if not opts.speed:
            return {**base, "reason": "not measured (--no-speed)"}, None
        if opts.group is not None or opts.case is not None:
            return {**base, "reason": "not measured: only part of the tests ran (--group/--case)"}, None
        if verdict is not Verdict.AC:
            return {**base, "reason": "no speed points without correctness: not every test group passed"}, None
        from judge.timing.speedrun import BenchFailed, SpeedRun, config_for

        self._stop_worker()  # the correctness worker's memory and context are not needed any more
        t0 = time.monotonic()
        try:
            bench = SpeedRun(self.problem, self.submission, device=opts.device, interpret=opts.interpret, gpu=opts.gpu,
                          backend=self.backend, limits=self.limits, scratch=self.scratch,
                          config=config_for(self.problem, interpret=opts.interpret, overrides=opts.bench),
                          log=opts.log)
            result = bench.run()
        except BenchFailed as exc:
            self.timing["speed_seconds"] = round(time.monotonic() - t0, 3)
            speed = {**base, "scored": True, "reason": f"{exc.verdict} in the speed run: {exc.message}",
                     "verdict": exc.verdict, "details": exc.details}
            return speed, (Verdict(exc.verdict), f"speed run: {exc.message}")
        self.timing["speed_seconds"] = round(time.monotonic() - t0, 3)
        score = SpeedScore.from_spec(self.problem.spec.get("score", {}), self.problem.speed_points)
        return {**base, **score.section(result)}, None

    def _expected(self, inputs, params):
        dev = self.golden_device
        gold_args, naive_args = [], []
        for arg in inputs:
            if isinstance(arg, kit.TensorInput):
                gold_args.append(arg.values.to(dev).to(torch.float64))
                naive_args.append(arg.values.to(dev))
            else:
                gold_args.append(arg)
                naive_args.append(arg)
        golden = _as_list(self.problem.golden.golden(*gold_args))
        naive = _as_list(self.problem.golden.naive(*naive_args))
        dtypes = []
        for out in self.problem.outputs:
            dtypes.append(kit.dtype_of(params["dtype"] if out.dtype == "input" else out.dtype))
        return golden, naive, dtypes

    def _evaluate(self, reply, tensors, expected):
        """Judge one reply: (Outcome, the returned tensors when they could be read)."""
        problem = self.problem
        name = self.submission.name
        if reply.get("type") != "result":
            return Outcome(Verdict.RJ, "the worker sent something other than a result"), None
        if reply.get("status") == "error":
            err = reply.get("error", {}) if isinstance(reply.get("error"), dict) else {}
            details = {"error": err}
            if "illegal memory access" in str(err.get("message", "")):
                details["hint"] = ("a kernel loaded or stored outside its tensors: check masks, and that each "
                                   "tensor is addressed with its own strides")
            return Outcome(ERROR_VERDICTS.get(err.get("category"), Verdict.RTE), _error_text(err), details), None
        ev = reply.get("evidence", {}) if isinstance(reply.get("evidence"), dict) else {}
        got = _decode_outputs(reply, tensors)
        if ev.get("tampered"):
            return Outcome(Verdict.RJ, "the call changed what the judge relies on: " + ", ".join(ev["tampered"]),
                           {"tampered": ev["tampered"]}), got
        started = ev.get("started") if isinstance(ev.get("started"), dict) else {}
        if started:
            what = " and ".join(f"{n} {k}{'s' if n > 1 else ''}" for k, n in sorted(started.items()))
            return Outcome(Verdict.RJ, f"the call started {what} of its own: all work must be done by your "
                                       "Triton kernels, in this process and on this thread", {"started": started}), got
        if ev.get("threads_left"):
            return Outcome(Verdict.RJ, "threads the submission started were still running after it returned "
                                       f"({', '.join(ev['threads_left'])}): all work must be done by then",
                           {"threads_left": ev["threads_left"]}), got
        for out in reply.get("outputs", []):
            if out.get("tensor_subclass"):
                return Outcome(Verdict.RJ, f"the result is a torch.Tensor subclass ({out.get('type')}): results "
                                           "must be plain tensors (a subclass can compute inside the judge's checks)"), got
        ops = ev.get("torch_ops") or {}
        if ops:
            listed = ", ".join(f"torch {op}" for op in sorted(ops))
            return Outcome(Verdict.RJ, f"the answer was computed with PyTorch operators ({listed}); "
                                       "only allocation, views and copies may run outside your Triton kernels",
                           {"torch_ops": ops}), got
        if not ev.get("own_launches"):
            other = ev.get("other_launches") or {}
            more = f" (it launched only kernels defined elsewhere: {', '.join(other)})" if other else ""
            return Outcome(Verdict.RJ, f"no Triton kernel defined in {name} was launched{more}",
                           {"other_launches": other, "no_kernel": True}), got

        golden, naive, dtypes = expected
        want = len(problem.outputs)
        outs = reply.get("outputs", [])
        returned = reply.get("returned", "?")
        names = [o.name for o in problem.outputs]
        if want == 1:
            if returned != "torch.Tensor":
                return Outcome(Verdict.WA, f"{problem.entry_point} must return the tensor {names[0]} itself, "
                                           f"not a {returned}"), None
        elif returned not in ("tuple", "list") or len(outs) != want:
            return Outcome(Verdict.WA, f"{problem.entry_point} must return a tuple ({', '.join(names)}); "
                                       f"it returned {returned if returned not in ('tuple', 'list') else f'{len(outs)} items'}"), None
        expect_device = "cuda" if self.options.device == "cuda" else "cpu"
        tensor_iter = iter(tensors)
        got_tensors = []
        for i, out in enumerate(outs):
            oname = names[i]
            if out.get("kind") != "tensor":
                return Outcome(Verdict.WA, f"{oname} must be exactly a torch.Tensor, not {out.get('type')}"), None
            got = _tensor_from(out, next(tensor_iter))
            device = str(out.get("device", ""))
            if device.split(":")[0] != expect_device:
                return Outcome(Verdict.WA, f"{oname} is on {device}; expected it on the input's device ({expect_device})"), None
            if got.dtype != dtypes[i]:
                return Outcome(Verdict.WA, f"{oname} has dtype {_dn(got.dtype)}; expected {_dn(dtypes[i])}"), None
            if list(got.shape) != list(golden[i].shape):
                return Outcome(Verdict.WA, f"{oname} has shape {tuple(got.shape)}; expected {tuple(golden[i].shape)}"), None
            got_tensors.append(got)
        modified = reply.get("inputs_modified") or []
        if modified:
            which = ", ".join(f"argument {i + 1}" for i in modified)
            return Outcome(Verdict.WA, f"the entry point wrote into its inputs ({which}); "
                                       "it must leave them unchanged and return new tensors"), None
        for i, out in enumerate(outs):
            if out.get("aliases_input"):
                return Outcome(Verdict.WA, f"{names[i]} shares memory with an input; return a new tensor"), None
        for i, got in enumerate(got_tensors):
            out = problem.outputs[i]
            mismatch = checker.compare(out.name, got, golden[i], naive[i], dtypes[i], out.scope, problem.check,
                                       problem.check.get("dim_names", {}).get(out.name))
            if mismatch is not None:
                return Outcome(Verdict.WA, mismatch.message, {
                    "output": mismatch.output, "pattern": mismatch.pattern, "hint": mismatch.hint,
                    "bad": mismatch.bad, "total": mismatch.total,
                    "samples": [{"index": list(s[0]), "got": s[1], "expected": s[2], "allowed_error": s[3]}
                                for s in mismatch.samples],
                }), got_tensors
        for i, out in enumerate(outs):
            if not out.get("kernel_wrote"):
                return Outcome(Verdict.RJ, f"{names[i]} is right but none of your Triton kernels was given its "
                                           "memory: it was computed some other way"), got_tensors
        return Outcome(Verdict.AC), got_tensors

    # ------------------------------------------------------------------ groups

    def _run_group(self, group: Group) -> GroupResult:
        opts = self.options
        interp = opts.interpret
        domain = group.domain(interp)
        salt = f"{opts.seed}:{self.problem.id}:{group.name}"
        self._frozen = None
        ran = {"n": 0}

        if opts.case is not None:
            cases = [opts.case]
        else:
            cases = expand_examples(group.examples, domain, interp, salt)
        if "dtype" in domain and interp and "bfloat16" in (domain["dtype"] if isinstance(domain["dtype"], list)
                                                           else [domain["dtype"]]):
            if BF16_NOTE not in self.notes:
                self.notes.append(BF16_NOTE)

        def body(params):
            outcome = self.run_case(group, params)
            if outcome.message != "not run":
                ran["n"] += 1
            if not outcome.passed:
                raise CaseFailed(params, outcome)

        failure: CaseFailed | None = None
        try:
            if opts.case is not None:
                for params in cases:
                    body(params)
            else:
                n = opts.max_examples if opts.max_examples is not None else (
                    group.max_examples_interpret if interp else group.max_examples)
                if opts.quick:
                    n = min(n, 2)
                failure = self._hypothesis(group, domain, cases, n, salt, body)
        except CaseFailed as exc:
            failure = exc
        if failure is None:
            return GroupResult(group.name, group.about, group.points, True, ran["n"])
        return GroupResult(
            name=group.name, about=group.about, points=group.points, passed=False, cases_run=ran["n"],
            verdict=failure.outcome.verdict, case=failure.params, message=failure.outcome.message,
            details=failure.outcome.details, repro=self._repro(group, failure.params),
        )

    def _hypothesis(self, group, domain, examples, n, salt, body) -> CaseFailed | None:
        import hypothesis.internal.conjecture.engine as engine

        engine.MAX_SHRINKING_SECONDS = self.options.shrink_seconds
        first: list[CaseFailed] = []

        def prop(params):
            try:
                body(params)
            except CaseFailed as exc:
                if not first:
                    first.append(exc)
                raise

        test = given(params=params_strategy(domain, self.options.interpret))(prop)
        for ex in reversed(examples):
            test = example(params=ex)(test)
        test = settings(
            max_examples=max(n, 1),
            deadline=None,
            database=None,
            derandomize=False,
            suppress_health_check=list(HealthCheck),
            report_multiple_bugs=False,
            verbosity=Verbosity.quiet,
            phases=[Phase.explicit, Phase.generate, Phase.shrink] if n > 0 else [Phase.explicit],
            print_blob=False,
        )(test)
        test = seed(derive_seed(salt))(test)
        try:
            test()
        except CaseFailed as exc:
            return exc
        except (HypothesisException, BaseExceptionGroup) as exc:
            # A flaky submission (passes on replay) still failed once: report that.
            inner = _find_case_failed(exc)
            if inner is not None:
                return inner
            if first:
                return first[0]
            raise
        return None

    def _repro(self, group: Group, params: dict) -> str:
        parts = ["python", "-m", "judge", "test", str(self.problem.id), str(self.submission),
                 "--group", group.name, "--case", json.dumps(params, separators=(",", ":"))]
        if self.options.interpret and self.options.device == "cpu":
            parts += ["--device", "cpu"]
        elif self.options.interpret:
            parts += ["--device", self.options.device, "--interpret"]
        else:
            parts += ["--device", self.options.device]
        return shlex.join(parts)

    # ------------------------------------------------------------------ report

    def _report(self, verdict: Verdict, message: str, groups: list[GroupResult], details=None,
                speed: dict | None = None) -> Report:
        if not groups:
            groups = [GroupResult(g.name, g.about, g.points, False, 0, verdict, skipped="not run: " + message)
                      for g in self._selected_groups()]
        notes = list(self.notes)
        caveat = self.backend.caveat()
        if caveat:
            notes.append(caveat)
        data = self.submission.read_bytes() if self.submission.is_file() else b""
        return Report(
            problem={"id": self.problem.id, "slug": self.problem.slug, "title": self.problem.title},
            submission={"path": str(self.submission), "sha256": hashlib.sha256(data).hexdigest()},
            mode={"device": self.options.device, "interpret": self.options.interpret,
                  "sandbox": self.backend.name, "quick": self.options.quick},
            seed=self.options.seed,
            verdict=verdict,
            message=message,
            groups=groups,
            notes=notes,
            max_score=100.0,
            speed=speed or {"scored": False, "points": 0, "max_points": self.problem.speed_points,
                            "reason": f"not measured: {verdict.value} before the speed run"},
            elapsed_seconds=time.monotonic() - self.started,
            timing={k: round(v, 3) if isinstance(v, float) else v for k, v in self.timing.items()},
            worker=self.worker_info,
            output="\n".join(self.printed)[-8192:],
            details=details or {},
        )


# ---------------------------------------------------------------------- helpers


def _storage_payload(storage: torch.Tensor):
    from judge.shared import wire

    desc = {"dtype": wire.dtype_name(storage.dtype), "shape": [storage.numel()]}
    return desc, wire.storage_to_wire(storage)


def _tensor_from(out: dict, payload: bytes) -> torch.Tensor:
    from judge.shared import wire

    return wire.tensor_from_wire({"dtype": out["dtype"], "shape": out["shape"]}, payload)


def _decode_outputs(reply, tensors) -> list | None:
    """The returned tensors, when every returned item is a tensor (else None)."""
    outs = reply.get("outputs") or []
    if not outs or any(o.get("kind") != "tensor" for o in outs) or len(tensors) != len(outs):
        return None
    try:
        return [_tensor_from(o, t) for o, t in zip(outs, tensors)]
    except Exception:  # noqa: BLE001 - malformed output descriptors are judged later
        return None


def _as_list(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


def _dn(dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _find_case_failed(exc):
    if isinstance(exc, CaseFailed):
        return exc
    for inner in getattr(exc, "exceptions", ()) or ():
        found = _find_case_failed(inner)
        if found is not None:
            return found
    cause = exc.__cause__ or exc.__context__
    if cause is not None and cause is not exc:
        return _find_case_failed(cause)
    return None


def _error_text(err: dict) -> str:
    category = err.get("category", "runtime")
    kind = err.get("type", "Error")
    message = (err.get("message") or "").strip()
    first = message.splitlines()[0] if message else ""
    where = ""
    frames = err.get("frames") or []
    if category == "compile" and err.get("line"):
        # The kernel's own line, not the launch that triggered the compilation.
        where = f" (line {err['line']}: {err.get('code', '')})" if err.get("code") else f" (line {err['line']})"
    elif frames:
        f = frames[-1]
        where = f" (line {f['line']}: {f['code']})" if f.get("code") else f" (line {f['line']})"
    elif err.get("line"):
        where = f" (line {err['line']})"
    if category == "compile" and kind not in ("SyntaxError", "MissingEntryPoint", "BadEntryPoint", "WrongArity",
                                              "ModuleNotFoundError", "ImportError", "IndentationError"):
        return f"Triton could not compile the kernel{where}: {first}"
    if kind in ("MissingEntryPoint", "BadEntryPoint", "WrongArity", "SyntaxError", "IndentationError"):
        return first
    if kind in ("ModuleNotFoundError", "ImportError"):
        return first
    prefix = "error while importing the submission: " if err.get("at_import") else ""
    return f"{prefix}{kind}: {first}{where}"
