"""A judging run's GPU beside other judges' on the host: its cases wait while another judge times on the GPU (that
wait is not the run's time), the judge's own CUDA context is made ahead, and its own GPU work is capped to what
its reservation holds for it."""

from __future__ import annotations

import contextlib
import threading
import time

from judge import gpu_budget, timeline
from judge.options import Options, torch_index


class GpuShare:
    """The GPU as one judging run (judge.session) shares it; ``progress`` is the run's live progress."""

    def __init__(self, options: Options, golden_device: str, progress):
        self.options = options
        self.golden_device = golden_device
        self.progress = progress
        # Seconds this run's cases waited for another judge's speed run on the GPU (judge.timing.lock): not
        # the submission's time, so not in its run limit.
        self.wait_seconds = 0.0
        self._lock = threading.Lock()
        self._waiting = 0  # lanes waiting for it now, and since when (see shared)
        self._wait_since = 0.0
        self._warm_cancel = threading.Event()  # the session is over: its CUDA warm-up stops waiting for the GPU
        self._capped = False  # this process's own GPU work capped to its share (_cap_own)

    @contextlib.contextmanager
    def shared(self):
        """One case's GPU work (the worker's call, the golden model, a replay) beside other judges' cases,
        never while one of them times on this GPU (judge.timing.lock); the wait is not the run's time."""
        if self.options.device != "cuda" or self.options.interpret:
            yield
            return
        from judge.timing import lock

        def waiting(message: str) -> None:
            self.progress.stage("waiting for the GPU (another judge is timing on it)")
            if self.options.log:
                self.options.log(message)

        # The lanes wait for the same speed run at once: the run's waiting time is while any of them waits.
        with self._lock:
            if not self._waiting:
                self._wait_since = time.monotonic()
            self._waiting += 1
        got = False
        try:
            with lock.gpu_shared(self.options.gpu or 0, on_wait=waiting):
                got = True
                self._waited()
                yield
        finally:
            if not got:  # gave up while waiting (an exception, an interrupt)
                self._waited()

    def _waited(self) -> None:
        """One lane got the GPU (or gave up waiting): the last of the waiting lanes ends the waiting time."""
        with self._lock:
            self._waiting -= 1
            if not self._waiting:
                self.wait_seconds += time.monotonic() - self._wait_since

    def warm(self, claim) -> threading.Thread | None:
        """Make this process's CUDA context, and cuBLAS's, in a thread while the workers are handed over.

        The judge's own first GPU work (its first golden answer, or the first inputs made on the GPU) made
        them lazily, and every lane's first case waited for it at once: a lane's first golden answer took a
        second or more against milliseconds for the later ones (docs/measurements: submit latency on a GPU).
        Under the GPU lock shared, as a case: nothing runs on the GPU while another judge times."""
        if self.options.device != "cuda" or self.options.interpret:
            return None

        def warm() -> None:
            import torch

            from judge.timing import lock

            try:
                with (
                    lock.gpu_shared(self.options.gpu or 0, cancel=self._warm_cancel),
                    timeline.span("the judge's CUDA context, warmed"),
                ):
                    self._cap_own(claim)
                    a = torch.ones((8, 8), dtype=torch.float64, device=self.golden_device)
                    (a @ a).sum().item()
            except Exception:  # noqa: BLE001 - a saving, never a condition: the first case makes it as before
                pass  # (lock.Cancelled too: the session ended while another judge timed)

        thread = threading.Thread(target=warm, name="judge-cuda-warm", daemon=True)
        thread.start()
        return thread

    def _cap_own(self, claim) -> None:
        """This process's own GPU work (inputs, golden answers, checks) capped at what its reservation holds for it
        (judge.gpu_budget): beyond it, that work goes to the CPU, so the memory reserved for others stays theirs."""
        if claim.on and not self._capped:
            gpu_budget.cap_own_process(torch_index(self.options.gpu), claim.judge)
            self._capped = True

    def end(self, warm: threading.Thread | None, claim) -> None:
        """The session is over: its warm-up stopped, its own GPU work no longer capped."""
        if warm is not None:
            self._warm_cancel.set()  # a warm-up still waiting for the GPU (another judge timing) is not wanted
            warm.join()
        if self._capped:
            gpu_budget.cap_own_process(torch_index(self.options.gpu), -claim.judge)
