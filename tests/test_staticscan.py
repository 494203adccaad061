"""The static scan: every rule trips on a line that does what it names, and no
accepted solution or reference raises anything (a false RJ is the worst
outcome for a student)."""

from pathlib import Path

import pytest

from judge import staticscan

ROOT = Path(__file__).resolve().parents[1]
CLEAN = sorted([*ROOT.glob("problems/*/submissions/accepted/*.py"), *ROOT.glob("reference/*.py"),
                *ROOT.glob("problems/*/skeleton.py")])


@pytest.mark.parametrize("path", CLEAN, ids=lambda p: str(p.relative_to(ROOT)))
def test_accepted_solutions_raise_nothing(path):
    assert staticscan.scan(path.read_text()) == []


def _snippets():
    for module in staticscan.FORBIDDEN_MODULES:
        yield f"import {module}", f"import {module}"
        yield f"from {module} import x", f"import {module}"
    for chain in staticscan.FORBIDDEN_ATTRIBUTES:
        root = chain.split(".")[0]
        yield f"import {root}\nv = {chain}", chain
    for call in staticscan.FORBIDDEN_CALLS:
        yield f"{call}('x')", f"{call}()"
    for name in staticscan.FORBIDDEN_NAMES:
        yield f"f = g.{name}", name
    for root in sorted(staticscan.PROTECTED_ROOTS):
        yield f"{root}.something = None", f"{root}.something = ..."


@pytest.mark.parametrize("source,code", list(_snippets()))
def test_each_rule_trips(source, code):
    findings = staticscan.scan(source)
    assert any(f.code == code for f in findings), findings
    assert all(f.line >= 1 for f in findings)


@pytest.mark.parametrize("source,code", [
    ("import os as o\nv = o.environ['JUDGE_SEED']", "o.environ"),
    ("from os import environ", "from os import environ"),
    ("import torch.cuda as c\ns = c.Stream()", "c.Stream"),
    ("from torch import cuda\ncuda.synchronize = lambda: None", "cuda.synchronize = ..."),
    ("import time as t\nt.perf_counter = lambda: 0.0", "t.perf_counter = ..."),
    ("import triton\ndef f():\n    triton.runtime.jit.JITFunction.run = None", "triton.runtime.jit.JITFunction.run = ..."),
    # What a red team used to get past the first version of the scan:
    ("b = print.__self__", "__self__"),
    ("import torch\nC = getattr(torch, '_' + 'C')", "getattr()"),
    ("import os\nf = getattr(os, 'fo' + 'rk')", "getattr()"),
    ("import torch\nd = getattr(torch, '_C')", "getattr()"),
    ("g = getattr\nh = g(x, 'y')", "getattr"),
    ("import os\nm = os.sys.modules", "os.sys.modules"),
    ("import triton\nn = triton.runtime.interpreter.np", "np"),
    ("v = x.tolist()", "tolist"),
    ("a = x.numpy()", "numpy"),
    ("import torch\nt = torch.from_numpy(a)", "torch.from_numpy"),
    ("import torch\nlib = torch.library.custom_op('me::clone', mutates_args=())", "torch.library.custom_op"),
    ("import numpy as np", "import numpy"),
])
def test_aliases_do_not_hide_a_rule(source, code):
    assert any(f.code == code for f in staticscan.scan(source)), staticscan.scan(source)


@pytest.mark.parametrize("source", [
    "import math\nimport os.path\np = os.path.join('a', 'b')",
    "import torch\nimport triton\nimport triton.language as tl\nout = torch.empty_like(x)\nd = getattr(tl, 'float32')",
    "from triton import language as tl\nimport functools\ncfg = {'BLOCK': 128}\ncfg['BLOCK'] = 256",
    "import triton\nn = getattr(triton, 'cdiv')(10, 3)\nok = hasattr(x, 'stride')",
    "class Cfg:\n    pass\nc = Cfg()\nc.block = 64",
    "def f(x):\n    x.block = 1\n    return x",
])
def test_ordinary_kernel_code_is_not_flagged(source):
    assert staticscan.scan(source) == []


def test_the_report_names_the_line():
    src = "import torch\n\n\ndef add(x, y):\n    import subprocess\n    return x\n"
    (finding,) = staticscan.scan(src)
    assert finding.line == 5 and "subprocess" in finding.message() and finding.message().startswith("line 5:")

