"""The file's constants, held to the values its source gives them at every launch of its kernels.

The replay check (judge.replay) compiles the file's kernels apart from the file, with its top-level
constants bound as the source computes them (judge.shared.kernel_source: ``BLOCK = 128``,
``DO_WORK = tl.constexpr(1)``). The judged worker's kernels read the module's globals instead, as they
are when the kernel compiles (on a GPU) or runs (in the interpreter). A file that changes a constant
while it runs (``DO_WORK.value = 0`` around its launch, or a rebinding through the kernel's globals)
therefore runs another kernel than the one replayed: a red team launched a no-op there, wrote the
answer into the output from the host, and the replay, compiling the honest kernel, agreed.

So at every launch of one of the file's kernels the worker compares each constant, each of the file's
kernels (by identity) and each name through which the interpreter's rewrite of a kernel calls back into
it, as the kernel's globals hold them, with the source's (the interpreter's own): before the launch
(a GPU compiles then), after a callable grid returned (the submission's code, run inside the launch),
and after the launch. A difference is reported with the call's evidence as tampering (judge.rules.tampering).
"""

from __future__ import annotations

_MISSING = object()
_expected: dict = {}  # constant name -> the value the source gives it (as the replay binds it)
_kernels: dict = {}  # kernel name -> the @triton.jit function the import bound to it
# kernel name -> the objects from the module's value down to that function (an autotuner's .fn, ...): the
# check's fast path, several times cheaper than unwrapping again (it runs three times a launch).
_chains: dict = {}
_found: dict = {}  # name -> the first difference found for it since the last take()


def watch(path: str, source: str | None, namespace: dict) -> None:
    """Take the file's constants from its source, and its kernels as its import bound them in ``namespace``
    (integrity.kernels_of)."""
    from judge.untrusted import integrity

    _expected.clear()
    _kernels.clear()
    _chains.clear()
    _kernels.update(integrity.kernels_of(namespace))
    for name, fn in _kernels.items():
        chain, obj = [], namespace.get(name)
        while obj is not None and len(chain) < 9:
            chain.append(obj)
            if obj is fn:
                _chains[name] = tuple(chain)
                break
            obj = getattr(obj, "fn", None)
    # Every other global name a kernel's code reads (range, min, a module, a helper), as the import bound it
    # (or unbound: it falls through to the built-ins, held in LAUNCH_PATH).
    _names.clear()
    for fn in _kernels.values():
        while not hasattr(fn, "__code__") and hasattr(fn, "fn"):  # a JITFunction (InterpretedFunction): its .fn
            fn = fn.fn
        for name in _code_names(getattr(fn, "__code__", None)):
            if name not in _kernels and not name.startswith("__"):
                _names[name] = namespace.get(name, _MISSING)
    if source is None:
        return
    from judge.untrusted.kernel_namespace import constant_values

    try:
        _expected.update(constant_values(path, source))
    except Exception:  # noqa: BLE001 - the replay cannot bind them either: its kernels are not replayed
        pass
    _expected_plain.clear()
    _expected_plain.update({id(v): _plain(v) for v in _expected.values()})


_names: dict = {}  # a global name a kernel's code reads -> what the module held under it after the import


def _code_names(code, depth: int = 0) -> set:
    if code is None or depth > 8:
        return set()
    names = set(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names |= _code_names(const, depth + 1)
    return names


_constexpr = None  # triton.language.constexpr, once imported
_expected_plain: dict = {}  # id of an expected value (held in _expected) -> its _plain(), taken once


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
    ew, et, ev = _expected_plain[id(expected)] if id(expected) in _expected_plain else _plain(expected)
    if lw != ew or lt is not et:
        return False
    if et is float and lv != lv and ev != ev:  # NaN
        return True
    try:
        return bool(lv == ev)
    except Exception:  # noqa: BLE001 - a value that cannot be compared is not the source's
        return False


def check(fn, kernel: str, when: str, language: bool = True) -> None:
    """Compare the constants and kernels as ``fn`` (a kernel's Python function) reads them now, and with
    ``language`` Triton's language (about 40 us on 2 CPU cores: the guard asks for it before an interpreted
    launch and after its callable grid, before the interpreter runs the body; on a GPU only where a kernel
    compiles, the one time its body is read)."""
    if _language and language:
        _check_language(kernel, when)
    if not _expected and not _kernels and not _interpreter_names() and not _names:
        return
    space = getattr(fn, "__globals__", None)
    if not isinstance(space, dict):
        return
    for name, held in _names.items():
        if name in _expected:
            continue
        live = space.get(name, _MISSING)
        if live is held or (held is _MISSING and live is _interpreter_globals().get(name, _MISSING)):
            continue  # (the interpreter copies its own globals into a kernel's module at its first launch)
        _say(
            name,
            f"the name {name} (the kernel {kernel} reads it; your file's import left "
            f"{'nothing' if held is _MISSING else 'another object'} under it, and {when} it held "
            f"{'nothing' if live is _MISSING else 'another object'})",
        )
    for name, expected in _expected.items():
        live = space.get(name, _MISSING)
        if not _same(live, expected):
            _say(
                name,
                f"the constant {name} (your file sets it to {_show(expected)}; the kernel {kernel} read "
                f"{_show(live)} {when}: a kernel must run as your file's source reads)",
            )
    for name, own in _interpreter_names().items():
        live = space.get(name, _MISSING)
        if live is not _MISSING and live is not own:
            _say(
                name,
                f"the name {name} (Triton's interpreter runs a kernel's assignments and comparisons "
                f"through it; the kernel {kernel} found another object there {when})",
            )
    for name, obj in _kernels.items():
        live = space.get(name, _MISSING)
        chain = _chains.get(name)
        if chain and live is chain[0] and all(getattr(a, "fn", None) is b for a, b in zip(chain, chain[1:])):
            continue
        from judge.untrusted import integrity

        unwrapped = integrity.kernels_of({name: live}).get(name) if live is not _MISSING else None
        if unwrapped is not obj:
            _say(name, f"the kernel {name} (the kernel {kernel} found another object under its name {when})")


# The names through which the interpreter's rewrite of a kernel calls back into it (every assignment
# becomes interpreter_semantic.to_tensor(...), a chained comparison _InterpreterComparison(...)). It puts
# its own objects under them in the kernel's globals only where the file has not: a file that defines
# one runs its own code inside its kernel, in the worker alone (a red-team file: a mask made
# all-false there, the replay honest). Where a kernel's globals hold one, it must be the interpreter's.
INTERPRETER_NAMES = ("interpreter_semantic", "_InterpreterComparison", "interpreter_builder")
_interpreter: dict | None = None


def _interpreter_globals() -> dict:
    try:
        from triton.runtime import interpreter
    except ImportError:  # pragma: no cover
        return {}
    return vars(interpreter)


def _interpreter_names() -> dict:
    global _interpreter
    if _interpreter is None:
        try:
            from triton.runtime import interpreter
        except ImportError:  # pragma: no cover - a Triton without the interpreter
            _interpreter = {}
        else:
            _interpreter = {n: vars(interpreter)[n] for n in INTERPRETER_NAMES if n in vars(interpreter)}
    return _interpreter


# What a kernel's body calls by attribute (tl.store, tl.load, x + y through the tensor class): Triton's
# language as it was before the submission's import. The integrity check compares it after the import and
# after each call, which a file that swaps tl.store for a no-op only around its launch, and puts it back
# before returning, passes (a red-team file did); so it is compared at each launch too, by a
# fingerprint (each namespace's values by identity, in order), entry by entry only when that differs.
LANGUAGE = (
    "triton.language",
    "triton.language.core",
    "triton.language.math",
    "triton.language.standard",
    "triton.language.core.tensor",
    "triton.language.core.constexpr",
    "triton.language.core.dtype",
)
# What a launch itself calls, held the same way (red-team files, each AC before: range swapped in
# the built-ins under a kernel's loop, torch.Tensor.data_ptr swapped so that the interpreter gave the
# kernel other memory, the interpreter's C store swapped): the built-ins, the tensor class, the
# interpreter's module and its C module, its handle and builder classes. LAUNCH is what a GPU's launch
# calls on its arguments at every launch (data_ptr): compared then, and all of it where a kernel compiles
# (the built-ins too: 160 entries, about as much again a launch, for Triton's own code in the launch).
LAUNCH_PATH = (
    "builtins",
    "torch.Tensor",
    "triton._C.libtriton.interpreter",
    "triton.runtime.interpreter",
    "triton.runtime.interpreter.TensorHandle",
    "triton.runtime.interpreter.InterpreterBuilder",
    # (a third pass: the builder object's own create_masked_store, reached from a dtype's to_ir;
    # the jit module's mangle_type, which the interpreter calls for each argument)
    "triton.runtime.interpreter.interpreter_builder",
    "triton.runtime.interpreter.interpreter_semantic",
    "triton.runtime.jit",
    "numpy",
)
# Objects (not modules or classes) among them: their plain data changes at each launch (the grid's index),
# anything else set on them (a function in a method's place) is a change. The language's dtypes (tl.int32
# ...) are objects too: a to_ir set on one ran inside the launch with the interpreter's builder.
INSTANCES = {"triton.runtime.interpreter.interpreter_builder", "triton.runtime.interpreter.interpreter_semantic"}


def _dtype_instances() -> tuple:
    try:
        from triton.language import core
    except ImportError:  # pragma: no cover
        return ()
    names = tuple(
        f"triton.language.core.{n}"
        for n, v in vars(core).items()
        if isinstance(v, core.dtype) and not isinstance(v, type)
    )
    INSTANCES.update(names)
    return names


LAUNCH = ("torch.Tensor",)
_language: dict = {}  # namespace -> (fingerprint held to, its entries), taken by take_language() before the import


def _namespaces() -> dict:
    import importlib

    out = {}
    for name in LANGUAGE + LAUNCH_PATH + _dtype_instances():
        module, _, attr = name.rpartition(".")
        try:
            obj = importlib.import_module(name)
        except ImportError:
            try:
                obj = getattr(importlib.import_module(module), attr)
            except (ImportError, AttributeError):
                continue
        out[name] = obj
    return out


_spaces: dict = {}  # namespace name -> the module or class (held once resolved)


def take_language() -> None:
    """Fingerprint Triton's language now (before the submission is imported)."""
    _spaces.clear()
    _spaces.update(_namespaces())
    _language.clear()
    _language.update(
        {name: (_fingerprint(obj), dict(object.__getattribute__(obj, "__dict__"))) for name, obj in _spaces.items()}
    )
    _hold_interpreter_patches()


# What the interpreter itself puts into Triton's language. At each launch it replaces the language's
# builtins by its own (tl.store by a function of its module that calls the real one) and puts them back
# after; but a kernel's call of a @jit helper of Triton's (tl.cdiv, tl.max) patches the helper's own
# module (triton.language.core) and never puts it back, so after a first launch the language holds the
# interpreter's functions for good (Triton 3.9; every accepted file of 94-98 then read as changed). Each
# value the interpreter sets through its patch scope is recorded here under the entry it was set for, and
# a live entry that holds one is the interpreter's doing. What it replaced must itself be held (the
# language's own value, or one it set): a swap made after the launch's first check, from a pre-run hook,
# and wrapped by the interpreter's patch, is named as it is patched.
_made: dict = {}  # (namespace name, entry) -> {id: the value (weakly where it can be)} set by the interpreter
_space_names: dict = {}  # id(namespace object) -> its name in LANGUAGE


def _is_made(space: str, key: str, value) -> bool:
    made = _made.get((space, key))
    got = made.get(id(value)) if made is not None else None
    return got is not None and (got is value or (type(got) is _Held and got.value is value))


def _record_made(space: str, key: str, value) -> None:
    import weakref

    made = _made.get((space, key))
    if made is None:
        made = _made[(space, key)] = weakref.WeakValueDictionary()
    try:
        made[id(value)] = value
    except TypeError:  # not weak-referenceable (a property): held strongly, the last 64 of an entry
        held = _strong.setdefault((space, key), {})
        held[id(value)] = made[id(value)] = _Held(value)
        if len(held) > 64:
            held.pop(next(iter(held)))


class _Held:
    """A strong reference in a weak dictionary's place (its identity is compared through ``value``)."""

    __slots__ = ("value", "__weakref__")

    def __init__(self, value):
        self.value = value


_strong: dict = {}


def _hold_interpreter_patches() -> None:
    _space_names.clear()
    _space_names.update({id(obj): name for name, obj in _spaces.items()})
    try:
        from triton.runtime import interpreter
    except ImportError:  # pragma: no cover - a Triton without the interpreter
        return
    scope = getattr(interpreter, "_LangPatchScope", None)
    original = getattr(scope, "set_attr", None)
    if original is None or getattr(original, "_judge_wrapped", False):
        return
    here = interpreter.__file__

    def set_attr(self, obj, name, value):
        import sys

        space = _space_names.get(id(obj))
        # Only the interpreter's own patching counts as its doing (not a call of it from elsewhere).
        if space is not None and sys._getframe(1).f_code.co_filename == here and name not in IGNORED:
            before = object.__getattribute__(obj, "__dict__").get(name, _MISSING)
            held = _language.get(space, (None, {}))[1].get(name, _MISSING)
            member = (getattr(value, "__kwdefaults__", None) or {}).get("member", before)
            for what in (before, member):
                if what is not held and not _is_made(space, name, what):
                    _say(
                        f"{space}.{name}",
                        f"{space}.{name} (Triton's language was changed before the interpreter read it at a launch)",
                    )
                    break
            else:
                _record_made(space, name, value)
        return original(self, obj, name, value)

    set_attr._judge_wrapped = True
    scope.set_attr = set_attr


# What the interpreter's own first launch changes for good (the tensor class's repr, and its annotations,
# made on first read): not the submission's doing, and nothing a kernel computes with.
IGNORED = frozenset({"__repr__", "__annotations__"})


def _fingerprint(obj) -> tuple:
    return tuple(map(id, object.__getattribute__(obj, "__dict__").values()))


def check_launch(kernel: str, when: str) -> None:
    """Compare only what a GPU's launch reads at every launch (LAUNCH)."""
    _check_language(kernel, when, LAUNCH)


def _check_language(kernel: str, when: str, only=None) -> None:
    for name, (fast, before) in (
        list(_language.items()) if only is None else [(n, _language[n]) for n in only if n in _language]
    ):
        now = object.__getattribute__(_spaces[name], "__dict__")
        if tuple(map(id, now.values())) == fast:
            continue
        changed = [
            k
            for k, v in before.items()
            if k not in IGNORED and (live := now.get(k, _MISSING)) is not v and not _is_made(name, k, live)
        ]
        if name in INSTANCES:  # an object's plain data (its grid index) is not what the check is for
            changed = [k for k in changed if not (_data(before[k]) and _data(now.get(k, _MISSING)))]
            changed += [k for k in now if k not in before and not _data(now[k])]
        elif isinstance(_spaces[name], type):  # a new entry of a class shadows its bases' (a module's: nothing)
            changed += [k for k in now if k not in before and k not in IGNORED and not _is_made(name, k, now[k])]
        if not changed:  # only what the interpreter itself changes: the new state is the one to hold to
            _language[name] = (tuple(map(id, now.values())), before)
            continue
        what = ", ".join(f"{name}.{k}" for k in changed[:3])
        if name in LANGUAGE:
            _say(f"{name}.", f"{what} (Triton's language, which the kernel {kernel} calls, was changed {when})")
        else:
            _say(f"{name}.", f"{what} (which the launch of the kernel {kernel} calls, was changed {when})")


def _data(value) -> bool:
    t = type(value)
    if t in (int, float, bool, str, type(None)):
        return True
    return t is tuple and len(value) <= 8 and all(type(v) in (int, float, bool, str, type(None)) for v in value)


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
