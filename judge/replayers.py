"""Several replay workers for one run (judge.replay.Replayer), used as one: each replay takes a free one."""

from __future__ import annotations

import contextlib

from judge.replay import Replayer


class Replayers:
    """Several replay workers for one run, used as one Replayer by the test groups: each replay takes a free
    one. A lone ``submit`` on a GPU has two (replay_workers): through one worker, busy for most of the tests,
    the groups waited at their end for its last replays."""

    def __init__(self, members: list[Replayer]):
        import queue

        self.members = members
        self._free: queue.Queue = queue.Queue()
        for m in members:
            self._free.put(m)

    def prestart(self) -> None:
        for m in self.members:
            m.prestart()

    def wait_ready(self) -> None:
        for m in self.members:
            m.wait_ready()

    def release(self) -> None:
        for m in self.members:
            m.release()

    def stop(self) -> None:
        for m in self.members:
            m.stop()

    def close(self) -> None:
        for m in self.members:
            m.close()

    @property
    def timing(self) -> dict:
        out: dict = {}
        for m in self.members:
            for key, value in m.timing.items():
                out[key] = out.get(key, 0) + value
        return out

    def _on_free(self, replay):
        """``replay(member)`` on a free member, waited for when none is."""
        member = self._free.get()
        try:
            return replay(member)
        finally:
            self._free.put(member)

    def check(self, params: dict, inputs: list, reply, device: str, shared=contextlib.nullcontext, time_left=None):
        return self._on_free(lambda m: m.check(params, inputs, reply, device, shared=shared, time_left=time_left))

    def check_bench(self, params: dict, specs: list, outputs, device: str, shared=contextlib.nullcontext):
        """A speed run's replay of a checked call (Replayer.check_bench) on a free member."""
        return self._on_free(lambda m: m.check_bench(params, specs, outputs, device, shared=shared))
