"""The static scan: every rule trips on a line that does what it names, and no
accepted solution or reference raises anything (a false RJ is the worst
outcome for a student)."""

from pathlib import Path

import pytest

from judge import scan_tables, staticscan

ROOT = Path(__file__).resolve().parents[1]
CLEAN = sorted(
    [
        *ROOT.glob("problems/*/submissions/accepted/*.py"),
        *ROOT.glob("reference/*.py"),
        *ROOT.glob("problems/*/skeleton.py"),
    ]
)


def _allowed(path: Path) -> tuple:
    """The rules the file's problem lifts (problem.toml [rules] allow: 99 may use torch.library)."""
    from judge.problems import find_problem

    folder = path.parts[len(ROOT.parts) + 1] if path.parts[len(ROOT.parts)] == "problems" else path.stem
    return find_problem(folder).scan_allow


@pytest.mark.parametrize("path", CLEAN, ids=lambda p: str(p.relative_to(ROOT)))
def test_accepted_solutions_raise_nothing(path):
    from judge.shared.kernel_source import read_source

    assert staticscan.scan(read_source(path), _allowed(path)) == []  # as the judge reads it (a BOM dropped)


def test_a_lifted_rule_is_lifted_for_its_problem_only():
    source = "from torch.library import triton_op\nimport torch\nlib = torch.library.Library('x', 'DEF')\n"
    assert {f.line for f in staticscan.scan(source)} == {1, 3}
    assert staticscan.scan(source, ("torch.library",)) == []
    # Lifting torch.library lifts nothing else: torch's private modules stay refused.
    assert staticscan.scan("import torch._library\n", ("torch.library",)) != []


def _snippets():
    for module in scan_tables.FORBIDDEN_MODULES:
        yield f"import {module}", f"import {module}"
        yield f"from {module} import x", f"import {module}"
    for chain in scan_tables.FORBIDDEN_ATTRIBUTES:
        root = chain.split(".")[0]
        yield f"import {root}\nv = {chain}", chain
    for call in scan_tables.FORBIDDEN_CALLS:
        yield f"{call}('x')", f"{call}()"
    for name in scan_tables.FORBIDDEN_NAMES:
        yield f"f = g.{name}", name
    for root in sorted(scan_tables.PROTECTED_ROOTS):
        yield f"{root}.something = None", f"{root}.something = ..."


@pytest.mark.parametrize("source,code", list(_snippets()))
def test_each_rule_trips(source, code):
    findings = staticscan.scan(source)
    assert any(f.code == code for f in findings), findings
    assert all(f.line >= 1 for f in findings)


@pytest.mark.parametrize(
    "source,code",
    [
        ("import os as o\nv = o.environ['JUDGE_SEED']", "o.environ"),
        ("from os import environ", "from os import environ"),
        ("import os\nv = os.environb[b'JUDGE_SEED']", "os.environb"),
        ("from os import environb", "from os import environb"),
        ("import sys as s\ns.addaudithook(print)", "s.addaudithook"),
        ("from sys import addaudithook", "from sys import addaudithook"),
        ("import sys\nsys.setrecursionlimit(60)", "sys.setrecursionlimit"),
        ("from sys import setrecursionlimit as lim", "from sys import setrecursionlimit"),
        ("import torch.cuda as c\ns = c.Stream()", "c.Stream"),
        ("from torch import cuda\ncuda.synchronize = lambda: None", "cuda.synchronize = ..."),
        ("import time as t\nt.perf_counter = lambda: 0.0", "t.perf_counter = ..."),
        (
            "import triton\ndef f():\n    triton.runtime.jit.JITFunction.run = None",
            "triton.runtime.jit.JITFunction.run = ...",
        ),
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
    ],
)
def test_aliases_do_not_hide_a_rule(source, code):
    assert any(f.code == code for f in staticscan.scan(source)), staticscan.scan(source)


# Syntax that reads an attribute by name without an attribute node, and PyTorch's dispatch guard under
# other names (issue 12): each must trip the rule named.
@pytest.mark.parametrize(
    "source,code",
    [
        # class patterns: keyword attributes are attribute reads; positional ones read __match_args__
        ("match w:\n    case object(__dict__=d):\n        pass", "case ...(__dict__=...)"),
        ("match w:\n    case object(reply=r, _reader=q):\n        pass", "case ...(_reader=...)"),
        ("import torch as t\nmatch t:\n    case object(_C=c):\n        pass", "case ...(_C=...)"),
        ("import os\nmatch os:\n    case object(environ=e):\n        pass", "case ...(environ=...)"),
        ("match f():\n    case object(environ=e):\n        pass", "case ...(environ=...)"),
        ("import torch\nmatch torch:\n    case object(cuda=object(Stream=s)):\n        pass", "case ...(Stream=...)"),
        ("match e:\n    case [object(__traceback__=tb)]:\n        pass", "case ...(__traceback__=...)"),
        ("match w:\n    case Sneaky(r):\n        pass", "a positional class pattern"),
        ("class C:\n    __match_args__ = ('_C',)", "__match_args__"),
        # format strings read attributes by the names in them
        ("s = '{0.__class__}'.format(x)", "{...__class__}"),
        ("s = '{0.__traceback__.tb_frame.f_back.f_locals[self].nonce}'.format(e)", "{...tb_frame}"),
        ("s = '{0:{1._C}}'.format(1, torch)", "{..._C}"),
        ("s = ('{0.' + '_C}').format(torch)", ".format"),
        ("fmt = make()\ns = fmt.format_map(m)", ".format_map"),
        ("s = str.format(fmt, x)", ".format"),
        ("import string\nv = string.Formatter().get_field('0._C', [t], {})", "string.Formatter"),
        # name resolvers
        ("import torch.fx.node as n\ng = n.operator.attrgetter('_C')", "attrgetter"),
        ("import pydoc\nc = pydoc.locate('torch._C')", "import pydoc"),
        ("import torch\nc = torch.__getattr__('x')", "__getattr__"),
        # the dispatch guard under other names and paths
        (
            "import torch\ng = torch.ExcludeDispatchKeyGuard(torch.DispatchKeySet(torch.DispatchKey.Python))",
            "torch.ExcludeDispatchKeyGuard",
        ),
        ("from torch import ExcludeDispatchKeyGuard as G", "from torch import ExcludeDispatchKeyGuard"),
        ("import torch\nz = torch.ops.aten.add.Tensor.redispatch(k, x, y)", "redispatch"),
        ("from torch.utils._mode_utils import no_dispatch as nd", "from torch.utils._mode_utils import no_dispatch"),
        ("import torch._subclasses.fake_tensor as ft", "import torch._subclasses.fake_tensor"),
        ("import torch\nc = torch.cuda.memory._C", "torch.cuda.memory._C"),
        ("from torch.autograd.function import _C", "from torch.autograd.function import _C"),
        ("import torch.nn.functional as F\ng = F._C._DisableTorchDispatch", "_C"),
        (
            "from torch.utils.checkpoint import TorchDispatchMode",
            "from torch.utils.checkpoint import TorchDispatchMode",
        ),
        ("from torch.fx.experimental import proxy_tensor", "from torch.fx.experimental import proxy_tensor"),
        ("import torch\ng = getattr(torch, 'ExcludeDispatchKeyGuard')", "getattr()"),
        ("import torch\nm = torch.utils._python_dispatch", "torch.utils._python_dispatch"),
        (
            "import torch\nwith torch.autograd.profiler.record_function('PythonDispatchMode'):\n    pass",
            "torch.autograd.profiler",
        ),
        ("import torch\ntorch.cuda.set_per_process_memory_fraction(1.0)", "torch.cuda.set_per_process_memory_fraction"),
        # work with no dispatched operator: per-element callbacks, bytes out and back in
        ("out.map_(y, lambda a, b: a + b)", "map_"),
        ("out.map2_(x, y, f)", "map2_"),
        ("out.apply_(f)", "apply_"),
        ("import torch\nt = torch.frombuffer(b, dtype=torch.float32)", "frombuffer"),
        ("import torch\nt = torch.from_file('x', True, 4)", "from_file"),
        ("import torch, io\ntorch.save(x, io.BytesIO())", "torch.save"),
        ("from torch import save as keep", "from torch import save"),
        ("m = open('/proc/self/mem', 'rb')", "/proc"),
        ("import torch\ntorch.set_printoptions(precision=20)", "torch.set_printoptions"),
        # getattr with a plain name is the attribute itself
        ("import os\ne = getattr(os, 'environ')", "getattr()"),
        ("import torch\ns = getattr(torch, 'save')", "getattr()"),
    ],
)
def test_attribute_reads_by_other_syntax(source, code):
    findings = staticscan.scan(source)
    assert any(f.code == code for f in findings), findings


@pytest.mark.parametrize(
    "source",
    [
        "match n:\n    case int(v) if v > 0:\n        pass\n    case [a, b] | (a, b, _):\n        pass\n"
        "    case {'k': v}:\n        pass\n    case object(shape=s, dtype=d):\n        pass",
        "s = '{0.shape} {1:>{2}} {name}'.format(x, 'a', 3, name='n')\nt = f'{x.shape} {n:{w}}'",
        "import torch\nout = torch.empty_like(x)\nk = x.is_cuda and torch.cuda.is_available()",
    ],
)
def test_ordinary_syntax_is_not_flagged(source):
    assert staticscan.scan(source) == []


@pytest.mark.parametrize(
    "source",
    [
        "import math\nimport os.path\np = os.path.join('a', 'b')",
        "import torch\nimport triton\nimport triton.language as tl\nout = torch.empty_like(x)\nd = getattr(tl, 'float32')",
        "from triton import language as tl\nimport functools\ncfg = {'BLOCK': 128}\ncfg['BLOCK'] = 256",
        "import triton\nn = getattr(triton, 'cdiv')(10, 3)\nok = hasattr(x, 'stride')",
        "class Cfg:\n    pass\nc = Cfg()\nc.block = 64",
        "def f(x):\n    x.block = 1\n    return x",
    ],
)
def test_ordinary_kernel_code_is_not_flagged(source):
    assert staticscan.scan(source) == []


def test_the_report_names_the_line():
    src = "import torch\n\n\ndef add(x, y):\n    import subprocess\n    return x\n"
    (finding,) = staticscan.scan(src)
    assert finding.line == 5 and "subprocess" in finding.message() and finding.message().startswith("line 5:")


# What the red team of 2026-12-02 (third session) got past the scan (each was stopped later, at run time):
# generated code through timeit, and library attributes assigned through another name.
@pytest.mark.parametrize(
    "source,code",
    [
        ("import timeit\nr = timeit.timeit(s, globals=g, number=1)", "import timeit"),
        ("import doctest", "import doctest"),
        ("import linecache\nlinecache.cache[f] = (1, None, [src], f)", "import linecache"),
        ("import asyncio", "import asyncio"),
        ("import torch.multiprocessing as mp", "import torch.multiprocessing"),
        ("import torch\n_t = torch\n_t.manual_seed = f", "_t.manual_seed = ..."),
        ("import torch as T\na = T\nb = a.cuda\nb.synchronize = None", "b.synchronize = ..."),
        ("import torch\ndef g():\n    _t.manual_seed = f\n_t = torch", "_t.manual_seed = ..."),  # bound below its use
        ("import torch\nif (t := torch):\n    t.empty = None", "t.empty = ..."),
        ("import torch\nfor torch.manual_seed in [f]:\n    pass", "torch.manual_seed = ..."),
        ("import torch\nv = [0 for torch.manual_seed in [f]]", "torch.manual_seed = ..."),
        ("import torch\nwith ctx() as torch.manual_seed:\n    pass", "torch.manual_seed = ..."),
    ],
)
def test_generated_code_and_assignments_through_other_names(source, code):
    assert any(f.code == code for f in staticscan.scan(source)), staticscan.scan(source)


@pytest.mark.parametrize(
    "source",
    [
        "import torch\nx = torch.float16\ny = x",
        "import torch\nclass C:\n    pass\nc = C()\nc.a = 1",
        "import triton\ncfg = triton.Config({'BLOCK': 64})\ncfg.num_warps = 4",
        "for i in range(3):\n    pass",
    ],
)
def test_aliases_of_values_are_not_flagged(source):
    assert staticscan.scan(source) == []


# What the red team of 2026-12-03 got past the scan: any installed module could be imported, and some resolve
# names held in data (yaml's "!!python/name:", logging.config's resolver) to ctypes or anything else; a module
# written into the scratch folder and imported through sys.path; a tl.constexpr's value changed around a launch.
@pytest.mark.parametrize(
    "source,code",
    [
        pytest.param(
            "import yaml\nf = yaml.unsafe_load(s)",
            "import yaml",
            marks=pytest.mark.skipif(not staticscan._installed("yaml"), reason="PyYAML is not installed here"),
        ),
        ("import networkx", "import networkx"),  # installed wherever torch is
        ("import logging.config\nr = logging.config.BaseConfigurator({}).resolve", "import logging.config"),
        ("from jinja2 import Template", "import jinja2"),
        ("import sympy", "import sympy"),
        ("import zipimport", "import zipimport"),
        ("import pdb", "import pdb"),
        ("import sys\nsys.path.insert(0, '/scratch')", "sys.path"),
        ("from sys import path\npath.append('.')", "from sys import path"),
        ("import sys as s\ns.meta_path.append(f)", "s.meta_path"),
        ("import torch\nm = torch.hub.load(d, 'm', source='local')", "torch.hub.load"),
        ("import torch.package", "import torch.package"),
        ("import torch\ns = torch.jit.CompilationUnit(src)", "torch.jit.CompilationUnit"),
        ("import os\nos.execvp('sh', ['sh'])", "os.execvp"),
        ("DO_WORK.value = 0", "DO_WORK.value = ..."),
        ("k.fn.c.value += 1", "k.fn.c.value = ..."),
        ("object.__setattr__(c, 'value', 0)", "__setattr__"),
        ("f.__annotations__['x'] = s", "__annotations__"),
        ("import typing\nh = typing.get_type_hints(f)", "get_type_hints"),
        ("from typing import ForwardRef", "from typing import ForwardRef"),
        # an annotation written as a string is code to typing (get_type_hints, functools.singledispatch)
        ("def f(x: \"__import__('ctypes')\"):\n    pass", "__import__()"),
        ("def f(x) -> 'print.__self__':\n    pass", "__self__"),
        ("v: 'exec(s)' = 1", "exec()"),
        ("def f(x: 'not an expression ('):\n    pass", "a string annotation"),
        # the interpreter's hooks, taken from a kernel's globals (a second pass the same day)
        ("from triton.runtime.interpreter import interpreter_builder", "import triton.runtime.interpreter"),
        ("import triton\nb = triton.runtime.interpreter.TensorHandle", "triton.runtime.interpreter.TensorHandle"),
        ("class _InterpreterComparison(C):\n    pass", "class _InterpreterComparison"),
        ("def f():\n    global interpreter_semantic\n    interpreter_semantic = g", "global interpreter_semantic"),
        ("interpreter_semantic = object()", "interpreter_semantic"),
        # setattr by a computed name through functools (a third pass)
        ("import functools\nfunctools.update_wrapper(tl, F, assigned=(n,), updated=())", "update_wrapper"),
        ("from functools import wraps\nd = wraps(f, assigned=('__name__',))", "wraps(assigned=/updated=)"),
        # what a kernel calls through its module's globals and the built-ins (red team of 2026-12-04)
        ("def f():\n    global range\n    range = g", "global range"),
        ("import dataclasses\nb = dataclasses.builtins", "builtins"),
        ("s = _interpreter.store", "_interpreter"),
        ("def put(d, f):\n    d.to_ir = f", "d.to_ir = ..."),
        ("def put(b, f):\n    b.create_masked_store = f", "b.create_masked_store = ..."),
        ("import triton.language as tl\nclass D(tl.dtype):\n    pass", "class D(dtype)"),
    ],
)
def test_imports_outside_the_list_and_names_resolved_from_data(source, code):
    assert any(f.code == code for f in staticscan.scan(source)), staticscan.scan(source)


@pytest.mark.parametrize(
    "source",
    [
        "import math, functools, itertools, dataclasses, typing, os.path, sys, time, struct, random\nimport triton",
        "from __future__ import annotations\nfrom typing import Optional\nimport torch\n"
        "def f(x: 'torch.Tensor', n: Optional[int] = None) -> 'torch.Tensor':\n    return x",
        "import torch.nn.functional as F\nfrom collections import namedtuple\nimport enum, warnings, copy",
        "import fancy_kernels_that_do_not_exist",  # not installed: left to the import, which is CE, not RJ
        "import functools\ndef deco(f):\n    @functools.wraps(f)\n    def g(*a):\n        return f(*a)\n    return g",
    ],
)
def test_what_a_kernel_file_imports_is_not_flagged(source):
    assert staticscan.scan(source) == []
