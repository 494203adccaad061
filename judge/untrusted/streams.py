"""CUDA streams and graphs by what they are, not by the names a source reaches them through.

The judge times a call from its own stream and checks outputs a call returned once its own stream is done;
work on another stream, or captured into a CUDA graph and replayed, is work its clocks and records may miss.
The static scan refuses the names it knows (``torch.cuda.Stream``...), but a stream or a graph has many names
(``torch.cuda.streams.Stream``, ``torch.Stream``, ``torch.accelerator.set_stream``, ``torch.cuda.set_stream``,
``ExternalStream``, ``torch.cuda.graphs.CUDAGraph``...), and a list of them is never done. So the worker looks
at what the call actually uses, at run time:

* each watched call (guard.watching, guard.counting) begins on the judge's stream: the one current when the
  judge enters the watch, and any the judge declares for its own CUDA graph capture (:func:`judges`);
* at every launch of a Triton kernel, at every PyTorch operator the operator watch sees, and when the call
  returns, the current stream must be one of those, and a stream capture may be under way only where the
  judge began it;
* a CUDA graph capture begun from the file's code, at any time (its import included), is found where it
  begins (``capture_begin`` of PyTorch's graph class, below any name the file used for it).

What it finds goes into the call's tampering evidence (judge.rules.tampering: RJ), naming the file's line.
Nothing of this runs in the interpreter (no CUDA). Every check is the judge's code, in the worker.
"""

from __future__ import annotations

import os
import sys

_WORKER_CODE_DIR = os.path.dirname(os.path.realpath(__file__)) + os.sep  # judge/untrusted: the worker's own code


class _State:
    submission = ""  # the file's real path (target)
    on = False  # a watched call on a GPU is running (begin .. end)
    allowed: set = set()  # the judge's streams for this call: (device, raw handle)
    capture_ok = False  # a capture under way is the judge's
    checks = True  # off in the speed run's requests (timed)
    found: dict = {}  # what -> message, at most a few per call


_state = _State()


def target(path: str) -> None:
    """The submission's file (whose line a finding names)."""
    _state.submission = os.path.realpath(path) if path else ""


def _torch():
    torch = sys.modules.get("torch")
    if torch is None or not hasattr(torch, "cuda"):
        return None
    try:
        return torch if torch.cuda.is_initialized() else None
    except Exception:  # noqa: BLE001
        return None


def _current(torch):
    s = torch.cuda.current_stream()
    return (s.device_index, s.cuda_stream)


def _capturing(torch) -> bool:
    try:
        return bool(torch.cuda.is_current_stream_capturing())
    except Exception:  # noqa: BLE001
        return False


def _line() -> str:
    """'line N: code' of the innermost frame of the file's own code on the stack, or ''."""
    import linecache

    f = sys._getframe(2)
    while f is not None:
        path = os.path.realpath(f.f_code.co_filename)
        if path == _state.submission:
            code = linecache.getline(path, f.f_lineno).strip()
            return f"line {f.f_lineno}: {code}" if code else f"line {f.f_lineno}"
        f = f.f_back
    return ""


def _say(key: str, text: str) -> None:
    if key not in _state.found and len(_state.found) < 8:
        _state.found[key] = text


def begin() -> None:
    """A watched call begins: the current stream is the judge's."""
    torch = _torch()
    _state.on = torch is not None and _state.checks
    if not _state.on:
        return
    _state.allowed = {_current(torch)}
    _state.capture_ok = _capturing(torch)


def end() -> None:
    """The watched call returned: it must leave the judge's stream current, and no capture of its own open."""
    if _state.on:
        _check("when the call returned")
    _state.on = False


class timed:
    """Around a speed-run request (judge.untrusted.bench): its calls' streams are not checked. The timing
    accounts for work left on any stream itself (each sample ends with a device-wide synchronisation, measured
    against the call's own end), the judged cases check the streams of the same calls, and a capture begun
    from the file's code is still found. (On a GPU the checks fired at the first operator of every reference's
    timed calls, naming no line of the file, where the judged cases' checks of the same calls found nothing: an
    honest file was RJ.)"""

    def __enter__(self):
        self.saved = _state.checks
        _state.checks = False
        return self

    def __exit__(self, *exc):
        _state.checks = self.saved
        return False


class judges:
    """The judge's own CUDA graph capture, as a context entered inside ``torch.cuda.graph``: its capture stream
    is the judge's for the watched calls captured."""

    def __enter__(self):
        torch = _torch()
        self.saved = (set(_state.allowed), _state.capture_ok)
        if torch is not None:
            _state.allowed.add(_current(torch))
            _state.capture_ok = True
        return self

    def __exit__(self, *exc):
        _state.allowed, _state.capture_ok = self.saved
        return False


def at_launch(kernel: str) -> None:
    if _state.on:
        _check(f"at a launch of {kernel}")


def at_op(name: str) -> None:
    if _state.on:
        _check(f"at the operator {name}")


def _check(when: str) -> None:
    torch = _torch()
    if torch is None:
        return
    try:
        stream = _current(torch)
        capturing = _capturing(torch)
    except Exception:  # noqa: BLE001 - the CUDA context is gone: the call's own error says so
        return
    where = _line()
    at = f" ({where})" if where else ""
    if stream not in _state.allowed:
        _say(
            "stream",
            f"the CUDA stream ({when}{at} the current stream was one the call made or set, not the "
            "judge's: work there is work the judge's clock and checks may not see)",
        )
    if capturing and not _state.capture_ok:
        _say(
            "capture",
            f"the CUDA graph capture ({when}{at} the call was capturing work into a CUDA graph of its "
            "own: its replay is work no launch records)",
        )


def take() -> list[str]:
    """What was found since the last call; then forgets it."""
    out = list(_state.found.values())
    _state.found.clear()
    return out


def watch_captures() -> None:
    """A capture begun from the file's code, at any time, whatever it named the graph by: PyTorch's graph
    classes all begin a capture through ``capture_begin`` (the Python class's, and the C class below it)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return
    classes = []
    for owner, name in ((getattr(torch, "cuda", None), "CUDAGraph"), (getattr(torch, "_C", None), "_CUDAGraph")):
        cls = getattr(owner, name, None) if owner is not None else None
        if isinstance(cls, type) and cls not in classes:
            classes.append(cls)
    for cls in classes:
        original = cls.__dict__.get("capture_begin")
        if original is None or getattr(original, "_judge_wrapped", False):
            continue

        def capture_begin(self, *args, _original=original, **kwargs):
            where = _from_file()
            if where is not None:
                _say(
                    "capture",
                    f"the CUDA graph capture ({where}: the file began a capture of its own: its replay "
                    "is work no launch records)",
                )
            return _original(self, *args, **kwargs)

        capture_begin._judge_wrapped = True
        try:
            cls.capture_begin = capture_begin
        except (TypeError, AttributeError):  # a class that takes no attribute: the launch checks stand
            pass


def _from_file() -> str | None:
    """'line N: code' when the code that asked for this is the file's (the first frame outside the libraries is
    the file's, not the judge's worker), else None."""
    import linecache

    f = sys._getframe(2)
    while f is not None:
        path = os.path.realpath(f.f_code.co_filename)
        if path == _state.submission:
            code = linecache.getline(path, f.f_lineno).strip()
            return f"line {f.f_lineno}: {code}" if code else f"line {f.f_lineno}"
        if path.startswith(_WORKER_CODE_DIR):
            return None
        f = f.f_back
    return None
