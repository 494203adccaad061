"""The kernels' host-side code must compute the same in the judged worker and in the replay.

judge.shared.kernel_source refuses a @triton.constexpr_function that could tell
the two processes apart (a red team made the replayed kernel honest and the
judged one a no-op that way), and judge.untrusted.frontend compiles interpreted
launches with Triton's GPU front end, which refuses kernel bodies that are
plain Python.
"""

import textwrap

import pytest

from judge.shared import kernel_source

HEAD = "import triton\nimport triton.language as tl\nimport math\nLIMIT = 64\nSTATE = {}\n\n"


def impure(body: str):
    return kernel_source.extract(HEAD + textwrap.dedent(body)).impure


def test_a_pure_constexpr_function_passes():
    assert (
        impure("""
        @triton.constexpr_function
        def block_for(n, floor=16):
            b = max(floor, triton.next_power_of_2(n))
            return min(b, LIMIT) if n > 0 else floor
    """)
        == []
    )


@pytest.mark.parametrize(
    "body,why",
    [
        (
            "def f():\n    try:\n        return add is None\n    except NameError:\n        return True\n",
            "a try statement",
        ),
        ("def f():\n    return add is None\n", "the name add"),
        ("def f():\n    return not STATE.get('c')\n", "the name STATE"),
        ("def f(mark=None, _marks=[]):\n    return not _marks\n", "a default that is not a constant"),
        ("def f():\n    global X\n    return 1\n", "global X"),
        ("def f(x):\n    return x.__class__\n", "the private attribute"),
        ("def f(x):\n    x.y = 1\n    return 1\n", "an assignment to an attribute"),
        ("def f():\n    g = lambda: 1\n    return g()\n", "a nested function"),
        # What depends on where objects lie in memory, or on the process's hash seed (issue 40: a red team iterated
        # a set of strings, whose order differed between the worker and the replay).
        ("def f():\n    for s in {'alpha', 'beta', 'gamma'}:\n        return s == 'alpha'\n", "a set"),
        ("def f(xs):\n    return [x for x in {y for y in xs}][0]\n", "a set"),
        ("def f():\n    return hash('alpha') % 2 == 0\n", "the name hash"),
        ("def f():\n    return repr(tl.program_id)[-3] == 'a'\n", "the name repr"),
        ("def f():\n    return str(tl.program_id)[-3] == 'a'\n", "the name str"),
        ("def f():\n    return f'{tl.program_id}'[-3] == 'a'\n", "a formatted string"),
        ("def f():\n    return '%s' % (tl.program_id,)\n", "a formatted string"),
        ("def f():\n    return '{}'.format(tl.program_id)\n", "str.format"),
        ("def f():\n    return triton.knobs.cache.dir.endswith('-replay')\n", "triton.knobs.cache.dir"),
        ("def f():\n    m = triton\n    return m.knobs.cache.dir\n", "the module triton as a value"),
    ],
)
def test_each_way_to_see_the_process_is_refused(body, why):
    found = impure("@triton.constexpr_function\n" + body)
    assert found and any(why in w for _, _, w in found), found


def test_kernels_are_not_held_to_it():
    # A kernel body is checked by the compiler itself (a global that is not constexpr does not compile).
    assert (
        impure("""
        @triton.jit
        def k(x_ptr, BLOCK: tl.constexpr):
            tl.store(x_ptr + tl.arange(0, BLOCK), tl.load(x_ptr + tl.arange(0, BLOCK)))
    """)
        == []
    )


GOOD = """
import triton
import triton.language as tl

@triton.jit
def rms(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + cols, mask=cols < n, other=0.0).to(tl.float32)
    s = tl.sum(x * x, axis=0) / n
    tl.store(out_ptr + cols, x * tl.math.rsqrt(s), mask=cols < n)

@triton.jit
def python_body(x_ptr, n, BLOCK: tl.constexpr):
    v = tl.load(x_ptr + tl.arange(0, BLOCK))
    a = v.handle.data
    tl.store(x_ptr + tl.arange(0, BLOCK), v)

@triton.jit
def reads_address(x_ptr, n, BLOCK: tl.constexpr):
    v = tl.load(x_ptr + tl.arange(0, BLOCK))
    here = tl.cast(x_ptr, tl.int64, bitcast=True)
    tl.store(x_ptr + tl.arange(0, BLOCK), v + (here % 3).to(tl.float32))

@triton.jit
def makes_address(x_ptr, addr, n, BLOCK: tl.constexpr):
    v = tl.load(addr.to(tl.pointer_type(tl.float32)) + tl.arange(0, BLOCK))
    tl.store(x_ptr + tl.arange(0, BLOCK), v)

@triton.jit
def pointer_to_pointer(x_ptr, buf_ptr, n, BLOCK: tl.constexpr):
    pp = buf_ptr.to(tl.pointer_type(tl.pointer_type(tl.float32)), bitcast=True)
    tl.store(pp, x_ptr)

@triton.jit
def retypes_pointer(x_ptr, n, BLOCK: tl.constexpr):
    bits = tl.load(x_ptr.to(tl.pointer_type(tl.int32), bitcast=True) + tl.arange(0, BLOCK))
    tl.store(x_ptr.to(tl.pointer_type(tl.int32), bitcast=True) + tl.arange(0, BLOCK), bits ^ 1)
"""


def test_the_compile_check_takes_triton_and_refuses_python(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    from judge.untrusted.frontend import Checker
    from judge.untrusted.kernel_namespace import load_kernels

    path = tmp_path / "k.py"
    path.write_text(GOOD)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    ns, _, _ = load_kernels(str(path), interpret=True)
    checker = Checker(str(path))
    try:
        x, out = torch.randn(100), torch.empty(100)
        assert checker.check("rms", ns["rms"], [x, out, 100], {"BLOCK": 128}) is None
        refused = checker.check("python_body", ns["python_body"], [x, 100], {"BLOCK": 128})
        assert refused is not None and refused[0] == "compile" and "data" in refused[1]
        # Asked again, the answer comes from the cache (one compile per specialization).
        assert checker.check("python_body", ns["python_body"], [x, 100], {"BLOCK": 128}) == refused
        # A kernel that reads an address, or makes one, compiles; it is refused by what its IR does, at its line.
        kind, message, line = checker.check("reads_address", ns["reads_address"], [x, 100], {"BLOCK": 128})
        assert kind == "rule" and "reads_address converts a pointer to an integer" in message, message
        assert GOOD.splitlines()[line - 1].strip().startswith("here = tl.cast(x_ptr"), line
        kind, message, line = checker.check("makes_address", ns["makes_address"], [x, 1 << 40, 100], {"BLOCK": 128})
        assert kind == "rule" and "converts an integer to a pointer" in message, message
        assert GOOD.splitlines()[line - 1].strip().startswith("v = tl.load(addr.to("), line
        # A pointer to another element type is no address read: allowed.
        assert checker.check("retypes_pointer", ns["retypes_pointer"], [x, 100], {"BLOCK": 128}) is None
        # A kernel that kills the compiler (a pointer to pointers: an assertion of MLIR's) is refused, and the
        # check goes on for the next launches (it was off for the rest of the run once its child had died).
        buf = torch.zeros(100, dtype=torch.int64)
        kind, message, _ = checker.check("pointer_to_pointer", ns["pointer_to_pointer"], [x, buf, 100], {"BLOCK": 128})
        assert kind == "compile" and "crashed" in message, message
        assert checker.check("reads_address", ns["reads_address"], [x, 100], {"BLOCK": 64})[0] == "rule"
        # A launch the GPU's launcher could not type (a string that is no constexpr) is refused, not left unchecked.
        kind, message, _ = checker.check("rms", ns["rms"], [x, out, "100"], {"BLOCK": 128})
        assert kind == "compile" and "cannot be typed for a GPU" in message, message
    finally:
        checker.close()
