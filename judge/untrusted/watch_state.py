"""The watch's shared state: the record of the call being watched (``Watch``), the worker's settings for
the watch (``_state``), and whose code asked for something (``_from_submission``).

Every part of the watch (judge.untrusted.guard, launches, operators, op_record, spawns) reads and writes this
one state; the integrity check holds it (judge.untrusted.integrity).
"""

from __future__ import annotations

import os
import sys
import threading
from collections import Counter


class Watch:
    """The record of one entry-point call."""

    def __init__(self):
        self.own_launches: Counter = Counter()  # kernels defined in the submission
        self.other_launches: Counter = Counter()  # kernels defined anywhere else
        self.ops: Counter = Counter()  # disallowed torch operators, by name
        self.kernel_buffers: list[tuple[int, int]] = []  # storage ranges given to own kernels
        self.threads_before = threading.active_count()
        self.kernel_ids: set[int] = set()  # compiled kernels launched (see kernels())
        self.trace = None  # judge.untrusted.trace.Recorder: the call's launch sequence, for the replay check
        self.own_ops: Counter = Counter()  # the submission's own operators called (judge.untrusted.own_ops)


class _State:
    watch: Watch | None = None
    events: Counter = Counter()  # "thread", "process": started by the submission's own code
    depth = 0  # > 0 while a Triton launch (or autotuning) is on the stack
    submission = ""
    kernels: dict = {}  # id(compiled kernel) -> its resources, for kernels of the submission's file
    compile_seconds = 0.0  # time spent in launches that compiled (or loaded) a new kernel
    record_ok = False  # PyTorch's profiler shows this watch's dispatch mode (probed at install())
    quiet = 0  # > 0 while the recorder itself uses torch (its operators are not the submission's)
    benchmarking = 0  # > 0 while an autotuner times its configs (those launches are not the call's)
    namespace = ""  # the operator namespace the judge gave the submission (a factory problem), or ""
    interpret = False  # kernels run in Triton's interpreter (set by install())
    language_at_compile = False  # Triton's language is compared where a compiled kernel compiles (_wrap_compile)
    compiling = False  # the judge torch.compiles the entry point's calls (set by watch_file())


_state = _State()
_real: dict[str, str] = {}  # co_filename -> realpath (cached: frames are walked per operator)
_LIBRARY_DIRS: tuple[str, ...] = ()  # triton's and torch's packages, set by install()
_TRITON_DIRS: tuple[str, ...] = ()


def _where(filename: str) -> str:
    path = _real.get(filename)
    if path is None:
        path = _real[filename] = os.path.realpath(filename)
    return path


def _from_submission(skip: int = 2, stops: tuple[str, ...] | None = None) -> bool:
    """Whether the code that asked for this is the submission's own.

    Walks the stack outwards and stops at the first frame that belongs either
    to the submission's file (yes) or to Triton or PyTorch (no): the grid
    lambda, an autotune pre-hook, a heuristics function or (in the
    interpreter) a kernel body is the submission's code even inside a launch,
    while Triton copying arguments or PyTorch starting its own threads is not.
    For operators ``stops`` is Triton alone: PyTorch's dispatch frames sit
    between every operator and its caller.
    """
    stops = _LIBRARY_DIRS if stops is None else stops
    f = sys._getframe(skip)
    while f is not None:
        path = _where(f.f_code.co_filename)
        if path == _state.submission:
            return True
        if path.startswith(stops):
            return False
        f = f.f_back
    return False
