"""The file's constants, held to the values its source gives them at every launch of its kernels.

The replay check (judge.replay) compiles the file's kernels apart from the file, with its top-level
constants bound as the source computes them (judge.shared.kernel_source: ``BLOCK = 128``,
``DO_WORK = tl.constexpr(1)``). The judged worker's kernels read the module's globals instead, as they
are when the kernel compiles (on a GPU) or runs (in the interpreter). A file that changes a constant
while it runs (``DO_WORK.value = 0`` around its launch, or a rebinding through the kernel's globals)
therefore runs another kernel than the one replayed: a red team launched a no-op there, wrote the
answer into the output from the host, and the replay, compiling the honest kernel, agreed.

So at every launch of one of the file's kernels the worker compares each constant, and each of the
file's kernels (by identity), as the kernel's globals hold them, with the source's: before the launch
(a GPU compiles then), after a callable grid returned (the submission's code, run inside the launch),
and after the launch. A difference is reported with the call's evidence as tampering (judge.rules.tampering).
"""

from __future__ import annotations

_MISSING = object()
_expected: dict = {}  # constant name -> the value the source gives it (as the replay binds it)
_kernels: dict = {}  # kernel name -> the @triton.jit function the import bound to it
_found: dict = {}  # name -> the first difference found for it since the last take()


def watch(path: str, source: str | None, kernels: dict) -> None:
    """Take the file's constants from its source, and its kernels as imported (integrity.kernels_of)."""
    _expected.clear()
    _kernels.clear()
    _kernels.update(kernels)
    if source is None:
        return
    from judge.untrusted.replay import constant_values

    try:
        _expected.update(constant_values(path, source))
    except Exception:  # noqa: BLE001 - the replay cannot bind them either: its kernels are not replayed
        pass


_constexpr = None  # triton.language.constexpr, once imported


def _plain(value):
    """(how many ``tl.constexpr`` wrappers, the exact type within, the value within). A wrapper is one of
    exactly that class, read by its instance dict: a subclass's property could answer one value here and
    another to the compiler, so a subclass is a value of another type."""
    global _constexpr
    if _constexpr is None:
        from triton.language import constexpr

        _constexpr = constexpr
    wrappers = 0
    while type(value) is _constexpr and wrappers < 8:
        wrappers += 1
        try:
            value = object.__getattribute__(value, "__dict__").get("value", _MISSING)
        except AttributeError:  # a Triton whose constexpr keeps its value in a slot
            value = object.__getattribute__(value, "value")
    return wrappers, type(value), value


def _same(live, expected) -> bool:
    if live is expected:
        return True
    lw, lt, lv = _plain(live)
    ew, et, ev = _plain(expected)
    if lw != ew or lt is not et:
        return False
    if et is float and lv != lv and ev != ev:  # NaN
        return True
    try:
        return bool(lv == ev)
    except Exception:  # noqa: BLE001 - a value that cannot be compared is not the source's
        return False


def check(fn, kernel: str, when: str) -> None:
    """Compare the constants and kernels as ``fn`` (a kernel's Python function) reads them now."""
    if not _expected and not _kernels:
        return
    space = getattr(fn, "__globals__", None)
    if not isinstance(space, dict):
        return
    for name, expected in _expected.items():
        live = space.get(name, _MISSING)
        if not _same(live, expected):
            _say(name, f"the constant {name} (your file sets it to {_show(expected)}; the kernel {kernel} read "
                 f"{_show(live)} {when}: a kernel must run as your file's source reads)")
    if _kernels:
        from judge.untrusted import integrity

        for name, obj in _kernels.items():
            live = space.get(name, _MISSING)
            unwrapped = integrity.kernels_of({name: live}).get(name) if live is not _MISSING else None
            if unwrapped is not obj:
                _say(name, f"the kernel {name} (the kernel {kernel} found another object under its name {when})")


def _show(value) -> str:
    """A value as the message shows it: only the plain types' own repr runs (never the submission's code)."""
    if value is _MISSING:
        return "nothing"
    _, kind, plain = _plain(value)
    if kind not in (int, float, bool, str, type(None)):
        return "another kind of value"
    text = repr(plain)
    return text if len(text) <= 40 else text[:37] + "..."


def _say(name: str, text: str) -> None:
    if name not in _found and len(_found) < 16:
        _found[name] = text


def take() -> list[str]:
    """The differences found since the last call, one for each name; then forgets them."""
    out = list(_found.values())
    _found.clear()
    return out
