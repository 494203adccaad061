"""PyTorch's deterministic mode and its NaN fill of fresh memory, switched without importing Inductor.

A correctness case runs with deterministic algorithms on and `fill_uninitialized_memory`, so memory the
submission allocates but never writes reads as NaN (an output element its kernel skipped cannot pass by
luck); a timed call runs as a user would run it, with both off.

`torch.use_deterministic_algorithms` imports `torch._inductor.config` to set Inductor's own flag, and with it most
of Dynamo, which doubles what `import torch` costs (docs/measurements: worker starts), paid by every worker at its
start and by the speed run's first switch. Nothing here uses Inductor unless the problem compiles the submission
with `torch.compile` (judge.untrusted.compiled); there Inductor's flag is set from this one when Inductor is
imported (`sync`).
"""

from __future__ import annotations

import sys


def _set_algorithms(torch, on: bool) -> None:
    setter = getattr(torch._C, "_set_deterministic_algorithms", None)
    if setter is None:  # a torch without the private setter: the public call, Inductor's import included
        torch.use_deterministic_algorithms(on, warn_only=True)
        return
    setter(on, warn_only=True)
    sync(torch)


def sync(torch) -> None:
    """Inductor's `deterministic` flag as PyTorch's, where Inductor has been imported (as the public call
    would have set it)."""
    config = sys.modules.get("torch._inductor.config")
    if config is not None:
        config.deterministic = torch.are_deterministic_algorithms_enabled()


def switch(torch, on: bool) -> tuple[bool, bool]:
    """Deterministic algorithms and the NaN fill both on or both off; returns the state before, for
    `restore`."""
    import torch.utils.deterministic

    saved = (torch.are_deterministic_algorithms_enabled(), torch.utils.deterministic.fill_uninitialized_memory)
    _set_algorithms(torch, on)
    torch.utils.deterministic.fill_uninitialized_memory = on
    return saved


def restore(torch, saved: tuple[bool, bool]) -> None:
    import torch.utils.deterministic

    _set_algorithms(torch, saved[0])
    torch.utils.deterministic.fill_uninitialized_memory = saved[1]
