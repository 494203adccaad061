"""The speed run as a stage of one judging run (judge.session): its workers spawned and warmed while the test
groups still run, dropped when a group fails, and the run itself once the tests have passed."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from judge import timeline
from judge.options import Options, no_speed_run, replay_workers
from judge.problems import Problem
from judge.verdicts import Verdict


class SpeedStage:
    """The speed run of one submission; ``timing`` is the session's timing section, which its figures join."""

    def __init__(
        self,
        problem: Problem,
        submission: Path,
        options: Options,
        *,
        backend,
        limits,
        progress,
        replay: bool,
        timing: dict,
    ):
        self.problem = problem
        self.submission = submission
        self.options = options
        self.backend = backend
        self.limits = limits
        self.progress = progress
        self.replay = replay
        self.timing = timing
        self._run = None  # judge.timing.speedrun.SpeedRun, its workers spawned while tests still run
        self._dropped: threading.Thread | None = None  # stopping the one spawned, after a group failed

    def run(self, verdict: Verdict, scratch: Path, claim, stop_tests):
        """The speed section, and (verdict, message) when the speed run itself failed the submission.
        ``stop_tests()`` stops the test workers (and the replays') before it starts."""
        from judge.timing.score import SpeedScore

        opts = self.options
        base = {"scored": False, "points": 0, "max_points": self.problem.speed_points}
        why_not = no_speed_run(self.problem, opts, verdict)
        if why_not:
            return {**base, "reason": why_not}, None
        from judge.timing.findings import BenchFailed

        self.progress.stage("speed run: stopping the test workers")
        t_stop = time.monotonic()
        stop_tests()  # the correctness workers' memory and contexts are not needed any more
        t0 = time.monotonic()
        self.timing["workers_stop_seconds"] = round(t0 - t_stop, 3)
        timeline.add("stop the test workers", t_stop, t0)
        run, self._run = self._run or self._new(scratch), None
        try:
            claim.to_speed(run)  # the tests' memory for the speed run's (waiting for it if not held ahead)
            result = run.run()
        except BenchFailed as exc:
            self.timing["speed_seconds"] = round(time.monotonic() - t0, 3)
            speed = {
                **base,
                "scored": True,
                "reason": f"{exc.verdict.value} in the speed run: {exc.message}",
                "verdict": exc.verdict.value,
                "details": exc.details,
            }
            return speed, (exc.verdict, f"speed run: {exc.message}")
        self.timing["speed_seconds"] = round(time.monotonic() - t0, 3)
        self.timing["speed_close_seconds"] = round(run.close_seconds, 3)  # of it, the speed workers' exits
        score = SpeedScore.from_spec(self.problem.spec.get("score", {}), self.problem.speed_points)
        return {**base, **score.section(result)}, None

    def _new(self, scratch: Path):
        from judge.timing.speedrun import SpeedRun, config_for

        opts = self.options
        # The PyTorch baseline earns no points, and timing it is a third of a speed run's rounds, warm-up and
        # profiler clock: a judged submission leaves it out unless asked (submit --pytorch); `judge bench`,
        # which is for timing kernels, keeps the problem's setting.
        overrides = {"torch_baseline": False, **{k: v for k, v in opts.bench.items() if v is not None}}
        # Its own scratch: the test workers' scratch folders (scratch/worker<i>) may still be in use.
        return SpeedRun(
            self.problem,
            self.submission,
            device=opts.device,
            interpret=opts.interpret,
            gpu=opts.gpu,
            backend=self.backend,
            limits=self.limits,
            scratch=scratch / "speed",
            config=config_for(self.problem, interpret=opts.interpret, overrides=overrides),
            log=opts.log,
            progress=self.progress,
            replay=self.replay,
            replay_workers=replay_workers(opts.device, opts.interpret, lone=opts.speed_early),
        )

    def drop(self, claim) -> None:
        """A group failed, so no speed run follows: the one spawned ahead (its workers, its warm-up and checks
        ahead) is stopped now, in a thread of its own, not once the later groups are over. Kept to the end, it
        took cores and the GPU beside the later groups, and beside other jobs' cases, for tens of seconds and
        for nothing (docs/measurements: grading throughput). The session's end waits for the thread (close)."""
        run, self._run = self._run, None
        if run is None:
            return

        def discard() -> None:
            run.discard()
            claim.drop_ahead()  # its workers' memory, back to the others once they are gone

        self._dropped = threading.Thread(target=discard, name="judge-speed-discard", daemon=True)
        self._dropped.start()

    def prestart(self, scratch: Path, claim) -> None:
        """Spawn the speed run's workers once the first test group has passed, so that their start (seconds
        each) overlaps the later groups instead of following them. Not before (unless options.speed_early: a lone submit on a GPU): a submission that fails its
        first group, as most wrong ones do, costs no speed workers."""
        if self._run is not None:
            return
        if no_speed_run(self.problem, self.options, Verdict.AC) is not None:
            return
        if not claim.speed_ahead():
            return  # no room for its workers beside the tests now: they start after them (or at a later group)
        self._run = self._new(scratch)
        self._run.spawn()
        # And their warm-up (the bench shapes' compiles, the watched calls), each shape's requests beside the cases
        # (the GPU taken shared, as a case does; its waits are not the session's cases' waits: not in
        # gpu_wait_seconds, which the run's limit leaves out).
        shared = None
        if self.options.device == "cuda" and not self.options.interpret:
            from judge.timing import lock

            shared = lambda cancel=None: lock.gpu_shared(self.options.gpu or 0, cancel=cancel)  # noqa: E731
        self._run.prewarm(shared=shared)

    def close(self) -> None:
        """The session's end: workers spawned ahead and never run (the tests failed after they were spawned)
        discarded, and a drop still under way waited for."""
        if self._run is not None:
            self._run.discard()
        if self._dropped is not None:
            self._dropped.join()
