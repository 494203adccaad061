"""What every worker process does first, the submission's (judge.untrusted.runner) and the replay's
(judge.untrusted.replay) alike: take the protocol's descriptors, and warm Triton's compiler."""

from __future__ import annotations

import os


def take_protocol_fds() -> tuple[int, int]:
    proto_in = os.dup(0)
    proto_out = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)  # print() now goes to stderr, which the judge caps
    return proto_in, proto_out


def warm_compiler(interpret: bool) -> None:
    """On a GPU, what Triton's first compile in a process computes once, computed before any submission: the key of
    its own build (triton.runtime.cache.triton_key hashes its compiler's sources and libtriton, most of a second).
    Profiled, it is a visible share of a `submit`'s worker time, in each worker's first compile, after the
    submission has arrived (docs/measurements: worker starts); a pooled worker does it while it waits. Nothing in
    the interpreter, which compiles nothing."""
    if interpret:
        return
    try:
        from triton.runtime.cache import triton_key

        triton_key()
    except Exception:  # noqa: BLE001 - another Triton: its first compile pays it, as before
        pass
