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
    assert impure("""
        @triton.constexpr_function
        def block_for(n, floor=16):
            b = max(floor, triton.next_power_of_2(n))
            return min(b, LIMIT) if n > 0 else floor
    """) == []


@pytest.mark.parametrize("body,why", [
    ("def f():\n    try:\n        return add is None\n    except NameError:\n        return True\n", "a try statement"),
    ("def f():\n    return add is None\n", "the name add"),
    ("def f():\n    return not STATE.get('c')\n", "the name STATE"),
    ("def f(mark=None, _marks=[]):\n    return not _marks\n", "a default that is not a constant"),
    ("def f():\n    global X\n    return 1\n", "global X"),
    ("def f(x):\n    return x.__class__\n", "the private attribute"),
    ("def f(x):\n    x.y = 1\n    return 1\n", "an assignment to an attribute"),
    ("def f():\n    g = lambda: 1\n    return g()\n", "a nested function"),
])
def test_each_way_to_see_the_process_is_refused(body, why):
    found = impure("@triton.constexpr_function\n" + body)
    assert found and any(why in w for _, _, w in found), found


def test_kernels_are_not_held_to_it():
    # A kernel body is checked by the compiler itself (a global that is not constexpr does not compile).
    assert impure("""
        @triton.jit
        def k(x_ptr, BLOCK: tl.constexpr):
            tl.store(x_ptr + tl.arange(0, BLOCK), tl.load(x_ptr + tl.arange(0, BLOCK)))
    """) == []


GOOD = '''
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
'''


def test_the_compile_check_takes_triton_and_refuses_python(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    from judge.untrusted.frontend import Checker
    from judge.untrusted.replay import load_kernels

    path = tmp_path / "k.py"
    path.write_text(GOOD)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    ns, _, _ = load_kernels(str(path), interpret=True)
    checker = Checker(str(path))
    try:
        x, out = torch.randn(100), torch.empty(100)
        assert checker.check("rms", ns["rms"], [x, out, 100], {"BLOCK": 128}) is None
        refused = checker.check("python_body", ns["python_body"], [x, 100], {"BLOCK": 128})
        assert refused is not None and "data" in refused
        # Asked again, the answer comes from the cache (one compile per specialization).
        assert checker.check("python_body", ns["python_body"], [x, 100], {"BLOCK": 128}) == refused
    finally:
        checker.close()
