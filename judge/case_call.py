"""One case through one worker: its inputs made by the problem's golden.py and sent as data, the judge's own answers
computed while the worker runs, the parsed reply judged (judge.judgement)."""

from __future__ import annotations

import time

from judge import calls, expected, kit, timeline
from judge.channel import WorkerDied
from judge.exchange import Exchange, encode_inputs
from judge.judgement import death_outcome, judge_case
from judge.kit import generator
from judge.options import Options
from judge.problems import Group, Problem
from judge.shared import tracing


class CaseCall:
    """The cases of one judging run (judge.session), on whichever of its workers runs them."""

    def __init__(
        self, problem: Problem, submission_name: str, options: Options, *, golden_device: str, case_seconds: float
    ):
        self.problem = problem
        self.submission_name = submission_name
        self.options = options
        self.golden_device = golden_device
        self.case_seconds = case_seconds

    def __call__(self, ex: Exchange, kind: str, params: dict, input_bytes: int | None, group: Group, lane: int):
        """(Outcome, the returned tensors or None, the inputs' size in bytes, (inputs, reply) of a passing case
        for the replay or None)."""
        with timeline.span(f"{kind} ({group.name})", lane=lane) as about:
            before = {k: ex.timing[k] for k in ("kernels_compiled", "compile_seconds", "worker_seconds")}
            ex.last_phases = {}
            try:
                return self._timed(ex, kind, params, input_bytes, group)
            finally:
                about.update({k: round(ex.timing[k] - v, 4) for k, v in before.items()})
                about.update({f"worker_{k}_seconds": round(v, 4) for k, v in ex.last_phases.items()})

    def _timed(self, ex: Exchange, kind: str, params: dict, input_bytes: int | None, group: Group):
        t_inputs = time.monotonic()
        with kit.computing_on(self.golden_device):
            inputs = self.problem.golden.make_inputs(dict(params), generator(params["seed"]))
        sent, answers = inputs, None
        t0 = time.monotonic()
        if group.call == "grad":
            # The cotangents follow the arguments; they are drawn in the outputs' shapes, so the answers first.
            answers = expected.for_inputs(self.problem, inputs, params, self.golden_device)
            cots = calls.cotangents(answers, params)
            calls.add_gradients(self.problem, answers, inputs, cots)
            sent = inputs + cots
        wire_args, payloads, nbytes = encode_inputs(sent)
        input_bytes = input_bytes or nbytes
        try:
            case_id = ex.send(
                kind,
                wire_args if kind == "case" else None,
                payloads,
                call=calls.case_spec(self.problem, group, self.options.interpret),
            )
            timeline.add("inputs, sent", t_inputs, t_sent := time.monotonic())
            if answers is None:
                answers = expected.for_inputs(self.problem, inputs, params, self.golden_device)
            ex.timing["golden_seconds"] += time.monotonic() - t0
            timeline.add("golden answer", t_sent, t_golden := time.monotonic())
            # Outputs, and the bytes of any memory from outside the call its record carries.
            reply = ex.receive(case_id, max_bytes=8 * input_bytes + (1 << 20) + tracing.snapshot_budget(input_bytes))
            timeline.add("the worker's reply", t_golden, time.monotonic())
        except WorkerDied as died:
            ex.stop()
            return (
                death_outcome(
                    died.reason, died.detail, limit_seconds=self.case_seconds, interpret=self.options.interpret
                ),
                None,
                input_bytes,
                None,
            )
        device = "cuda" if self.options.device == "cuda" else "cpu"
        with timeline.span("check"):
            outcome, got = judge_case(
                self.problem, reply, answers, device, self.submission_name, specs=self.problem.outputs_for(group)
            )
        last = (inputs, reply) if kind == "case" and outcome.passed else None
        if getattr(reply, "error", None) is not None and reply.error.fatal:
            ex.stop()  # a CUDA error poisons the context: start afresh
        return outcome, got, input_bytes, last
