"""Every rule of the static scan refuses a line written by hand to break it.

tests/test_staticscan.py's test_each_rule_trips builds its snippets from the rule tables themselves, so a rule
deleted from a table took its test with it. Here each rule has its own hand-written snippet, and the scan must
refuse it *by that rule*: a finding with the code the rule reports and the rule's own reason. A rule deleted (or
made unreachable) fails its line here; a rule added without a snippet fails test_every_rule_has_a_snippet.
"""

import pytest

from judge import scan_tables
from judge.scan_tables import FORBIDDEN_ATTRIBUTES, FORBIDDEN_CALLS, FORBIDDEN_MODULES, FORBIDDEN_NAMES, UNLISTED_WHY
from judge.staticscan import scan

# module -> (a line that imports it, the code the finding names)
MODULES = {
    "ctypes": ("import ctypes", "import ctypes"),
    "cffi": ("from cffi import FFI", "import cffi"),
    "subprocess": ("import subprocess", "import subprocess"),
    "multiprocessing": ("from multiprocessing import Pool", "import multiprocessing"),
    "threading": ("import threading", "import threading"),
    "_thread": ("import _thread", "import _thread"),
    "concurrent": ("from concurrent.futures import ThreadPoolExecutor", "import concurrent.futures"),
    "socket": ("import socket", "import socket"),
    "gc": ("import gc", "import gc"),
    "inspect": ("import inspect", "import inspect"),
    "importlib": ("import importlib.util", "import importlib.util"),
    "builtins": ("import builtins", "import builtins"),
    "judge": ("from judge.untrusted import runner", "import judge.untrusted"),
    "pickle": ("import pickle", "import pickle"),
    "marshal": ("import marshal", "import marshal"),
    "signal": ("import signal", "import signal"),
    "resource": ("import resource", "import resource"),
    "mmap": ("import mmap", "import mmap"),
    "numpy": ("import numpy", "import numpy"),
    "posix": ("import posix", "import posix"),
    "_posixsubprocess": ("import _posixsubprocess", "import _posixsubprocess"),
    "code": ("import code", "import code"),
    "codeop": ("from codeop import compile_command", "import codeop"),
    "types": ("from types import FunctionType", "import types"),
    "operator": ("import operator", "import operator"),
    "pydoc": ("import pydoc", "import pydoc"),
    "pkgutil": ("import pkgutil", "import pkgutil"),
    "runpy": ("import runpy", "import runpy"),
    "copyreg": ("import copyreg", "import copyreg"),
    "unittest": ("from unittest import mock", "import unittest"),
    "timeit": ("import timeit", "import timeit"),
    "doctest": ("import doctest", "import doctest"),
    "linecache": ("import linecache", "import linecache"),
    "asyncio": ("import asyncio", "import asyncio"),
}

# chain -> (a snippet that reaches it, the code the finding names)
ATTRIBUTES = {
    "sys._getframe": ("import sys\ncaller = sys._getframe(1)", "sys._getframe"),
    "sys.modules": ("import sys\njudge = sys.modules['judge']", "sys.modules"),
    "sys.settrace": ("import sys\nsys.settrace(lambda *a: None)", "sys.settrace"),
    "sys.setprofile": ("import sys\nsys.setprofile(lambda *a: None)", "sys.setprofile"),
    "sys.path": ("import sys\nsys.path.insert(0, '/tmp/mine')", "sys.path"),
    "sys.meta_path": ("import sys\nfinders = sys.meta_path", "sys.meta_path"),
    "sys.path_hooks": ("import sys\nhooks = sys.path_hooks", "sys.path_hooks"),
    "sys.path_importer_cache": ("import sys\nsys.path_importer_cache.clear()", "sys.path_importer_cache"),
    "torch.package": ("import torch\nimp = torch.package.PackageImporter('k.pt')", "torch.package"),
    "torch.hub": ("import torch\nm = torch.hub.load('me/repo', 'add')", "torch.hub"),
    "torch.jit": ("import torch\nf = torch.jit.script(g)", "torch.jit"),
    "triton.runtime.interpreter": (
        "import triton\nb = triton.runtime.interpreter.InterpreterBuilder",
        "triton.runtime.interpreter",
    ),
    "os.environ": ("import os\nseed = os.environ['JUDGE_SEED']", "os.environ"),
    "os.environb": ("import os\nseed = os.environb[b'JUDGE_SEED']", "os.environb"),
    "os.getenvb": ("import os\nseed = os.getenvb(b'JUDGE_SEED')", "os.getenvb"),
    "sys.addaudithook": ("import sys\nsys.addaudithook(lambda event, args: None)", "sys.addaudithook"),
    "sys.setrecursionlimit": ("import sys\nsys.setrecursionlimit(60)", "sys.setrecursionlimit"),
    "os.getenv": ("import os\nseed = os.getenv('JUDGE_SEED')", "os.getenv"),
    "os.putenv": ("import os\nos.putenv('X', '1')", "os.putenv"),
    "os.system": ("import os\nos.system('ls')", "os.system"),
    "os.popen": ("import os\nout = os.popen('ls').read()", "os.popen"),
    "os.fork": ("import os\npid = os.fork()", "os.fork"),
    "os.forkpty": ("import os\npid, fd = os.forkpty()", "os.forkpty"),
    "os.kill": ("import os\nos.kill(1, 9)", "os.kill"),
    "os.killpg": ("import os\nos.killpg(0, 9)", "os.killpg"),
    "os.write": ("import os\nos.write(1, b'{}')", "os.write"),
    "os.dup": ("import os\nfd = os.dup(1)", "os.dup"),
    "os.dup2": ("import os\nos.dup2(3, 1)", "os.dup2"),
    "os.execv": ("import os\nos.execv('/bin/sh', ['sh'])", "os.execv"),
    "os.execve": ("import os\nos.execve('/bin/sh', ['sh'], {})", "os.execve"),
    "os.execl": ("import os\nos.execl('/bin/sh', 'sh')", "os.execl"),
    "os.execle": ("import os\nos.execle('/bin/sh', 'sh', {})", "os.execle"),
    "os.execlp": ("import os\nos.execlp('sh', 'sh')", "os.execlp"),
    "os.execlpe": ("import os\nos.execlpe('sh', 'sh', {})", "os.execlpe"),
    "os.execvp": ("import os\nos.execvp('sh', ['sh'])", "os.execvp"),
    "os.execvpe": ("import os\nos.execvpe('sh', ['sh'], {})", "os.execvpe"),
    "os.spawnl": ("import os\nos.spawnl(0, '/bin/sh', 'sh')", "os.spawnl"),
    "os.spawnle": ("import os\nos.spawnle(0, '/bin/sh', 'sh', {})", "os.spawnle"),
    "os.spawnlp": ("import os\nos.spawnlp(0, 'sh', 'sh')", "os.spawnlp"),
    "os.spawnlpe": ("import os\nos.spawnlpe(0, 'sh', 'sh', {})", "os.spawnlpe"),
    "os.spawnve": ("import os\nos.spawnve(0, '/bin/sh', ['sh'], {})", "os.spawnve"),
    "os.spawnvp": ("import os\nos.spawnvp(0, 'sh', ['sh'])", "os.spawnvp"),
    "os.spawnvpe": ("import os\nos.spawnvpe(0, 'sh', ['sh'], {})", "os.spawnvpe"),
    "os.posix_spawnp": ("import os\nos.posix_spawnp('sh', ['sh'], {})", "os.posix_spawnp"),
    "os.spawnv": ("import os\nos.spawnv(0, '/bin/sh', ['sh'])", "os.spawnv"),
    "os.posix_spawn": ("import os\nos.posix_spawn('/bin/sh', ['sh'], {})", "os.posix_spawn"),
    "torch._C": ("import torch\nguard = torch._C._DisableTorchDispatch", "torch._C"),
    "torch.utils._python_dispatch": (
        "import torch\nm = torch.utils._python_dispatch.TorchDispatchMode",
        "torch.utils._python_dispatch",
    ),
    "torch._dynamo": ("import torch\ntorch._dynamo.reset()", "torch._dynamo"),
    "torch.Tensor._make_subclass": (
        "import torch\nt = torch.Tensor._make_subclass(C, x)",
        "torch.Tensor._make_subclass",
    ),
    "torch.cuda.Stream": ("import torch\nside = torch.cuda.Stream()", "torch.cuda.Stream"),
    "torch.cuda.stream": ("import torch\nwith torch.cuda.stream(s):\n    pass", "torch.cuda.stream"),
    "torch.cuda.CUDAGraph": ("import torch\ng = torch.cuda.CUDAGraph()", "torch.cuda.CUDAGraph"),
    "torch.cuda.graph": ("import torch\nwith torch.cuda.graph(g):\n    pass", "torch.cuda.graph"),
    "torch.cuda.set_sync_debug_mode": (
        "import torch\ntorch.cuda.set_sync_debug_mode(0)",
        "torch.cuda.set_sync_debug_mode",
    ),
    "torch.set_float32_matmul_precision": (
        "import torch\ntorch.set_float32_matmul_precision('medium')",
        "torch.set_float32_matmul_precision",
    ),
    "torch.use_deterministic_algorithms": (
        "import torch\ntorch.use_deterministic_algorithms(False)",
        "torch.use_deterministic_algorithms",
    ),
    "torch.backends": ("import torch\ntf32 = torch.backends.cuda.matmul", "torch.backends.cuda.matmul"),
    "torch.utils.deterministic": (
        "import torch\nd = torch.utils.deterministic.fill_uninitialized_memory",
        "torch.utils.deterministic.fill_uninitialized_memory",
    ),
    "torch.library": ("import torch\nlib = torch.library.Library('mine', 'DEF')", "torch.library.Library"),
    "torch.multiprocessing": (
        "import torch\nctx = torch.multiprocessing.get_context('fork')",
        "torch.multiprocessing.get_context",
    ),
    "torch.ops.load_library": ("import torch\ntorch.ops.load_library('fast.so')", "torch.ops.load_library"),
    "torch.utils.cpp_extension": (
        "import torch\nload = torch.utils.cpp_extension.load_inline",
        "torch.utils.cpp_extension.load_inline",
    ),
    "torch.from_numpy": ("import torch\nt = torch.from_numpy(a)", "torch.from_numpy"),
    "torch.ExcludeDispatchKeyGuard": (
        "import torch\nguard = torch.ExcludeDispatchKeyGuard(k)",
        "torch.ExcludeDispatchKeyGuard",
    ),
    "torch.DispatchKeySet": ("import torch\nks = torch.DispatchKeySet(k)", "torch.DispatchKeySet"),
    "torch.DispatchKey": ("import torch\nk = torch.DispatchKey.Python", "torch.DispatchKey.Python"),
    "torch.fx": ("import torch\ngm = torch.fx.symbolic_trace(f)", "torch.fx.symbolic_trace"),
    "torch.overrides": ("import torch\nm = torch.overrides.TorchFunctionMode", "torch.overrides.TorchFunctionMode"),
    "torch.profiler": ("import torch\nwith torch.profiler.profile():\n    pass", "torch.profiler.profile"),
    "torch.autograd.profiler": ("import torch\np = torch.autograd.profiler.profile()", "torch.autograd.profiler"),
    "torch.ops.profiler": ("import torch\nr = torch.ops.profiler._record_function_enter", "torch.ops.profiler"),
    "torch.cuda.set_per_process_memory_fraction": (
        "import torch\ntorch.cuda.set_per_process_memory_fraction(1.0)",
        "torch.cuda.set_per_process_memory_fraction",
    ),
    "string.Formatter": ("import string\nf = string.Formatter()", "string.Formatter"),
    "torch.save": ("import torch\ntorch.save(x, 'x.pt')", "torch.save"),
    "torch.load": ("import torch\nx = torch.load('x.pt')", "torch.load"),
    "torch.serialization": (
        "import torch\ns = torch.serialization.default_restore_location",
        "torch.serialization.default_restore_location",
    ),
    "torch.set_printoptions": ("import torch\ntorch.set_printoptions(precision=20)", "torch.set_printoptions"),
}

# built-in -> (a line that calls it, the code the finding names)
CALLS = {
    "exec": ("exec(source)", "exec()"),
    "eval": ("y = eval('x + 1')", "eval()"),
    "compile": ("c = compile(src, 'f', 'exec')", "compile()"),
    "__import__": ("os = __import__('os')", "__import__()"),
    "globals": ("g = globals()", "globals()"),
    "vars": ("d = vars(x)", "vars()"),
    "setattr": ("setattr(x, 'data', y)", "setattr()"),
    "delattr": ("delattr(x, 'data')", "delattr()"),
    "breakpoint": ("breakpoint()", "breakpoint()"),
    "locals": ("d = locals()", "locals()"),
}

# name -> a snippet that writes it (the finding's code is the name itself)
NAMES = {
    "__torch_function__": "class T(torch.Tensor):\n    __torch_function__ = staticmethod(f)",
    "__torch_dispatch__": "class T(torch.Tensor):\n    __torch_dispatch__ = staticmethod(f)",
    "__builtins__": "b = __builtins__",
    "__subclasses__": "kids = object.__subclasses__()",
    "__globals__": "g = add.__globals__",
    "__code__": "add.__code__ = other.__code__",
    "__self__": "mod = print.__self__",
    "__dict__": "d = x.__dict__",
    "__class__": "k = x.__class__",
    "__mro__": "m = T.__mro__",
    "__bases__": "b = T.__bases__",
    "__base__": "b = T.__base__",
    "__getattribute__": "v = object.__getattribute__(x, 'y')",
    "__closure__": "cells = f.__closure__",
    "__func__": "fn = m.__func__",
    "__wrapped__": "inner = kernel.__wrapped__",
    "__import__": "imp = builtins_module.__import__",
    "__loader__": "ld = __loader__",
    "__spec__": "sp = __spec__",
    "__reduce__": "r = x.__reduce__()",
    "__setattr__": "object.__setattr__(x, 'y', 1)",
    "__delattr__": "object.__delattr__(x, 'y')",
    "__annotations__": "a = f.__annotations__",
    "get_type_hints": "hints = typing.get_type_hints(f)",
    "update_wrapper": "functools.update_wrapper(w, f, assigned=names)",
    "ForwardRef": "r = typing.ForwardRef('os.environ')",
    "__reduce_ex__": "r = x.__reduce_ex__(2)",
    "f_back": "up = frame.f_back",
    "f_globals": "g = frame.f_globals",
    "f_locals": "v = frame.f_locals",
    "gi_frame": "fr = gen.gi_frame",
    "tb_frame": "fr = tb.tb_frame",
    "numpy": "a = numpy.asarray(x)",
    "np": "a = np.asarray(x)",
    "tolist": "values = x.tolist()",
    "__array__": "a = x.__array__()",
    "__array_interface__": "i = x.__array_interface__",
    "__cuda_array_interface__": "i = x.__cuda_array_interface__",
    "__dlpack__": "cap = x.__dlpack__()",
    "from_dlpack": "t = dlpack.from_dlpack(cap)",
    "cr_frame": "fr = coro.cr_frame",
    "ag_frame": "fr = agen.ag_frame",
    "__getattr__": "v = m.__getattr__('x')",
    "__match_args__": "Point.__match_args__ = ('environ',)",
    "attrgetter": "get = op.attrgetter(name)",
    "methodcaller": "call = op.methodcaller(name)",
    "import_module": "m = loader.import_module(name)",
    "resolve_name": "f = util.resolve_name(name)",
    "get_field": "v = fmt.get_field('0.x', (a,), {})",
    "vformat": "s = fmt.vformat(t, (), {})",
    "record_function": "with profiler.record_function('add_kernel'):\n    pass",
    "map_": "x.map_(y, f)",
    "map2_": "x.map2_(y, z, f)",
    "apply_": "x.apply_(f)",
    "frombuffer": "t = torch.frombuffer(b, dtype=torch.float32)",
    "ctypes": "c = compiler.ctypes",
    "_ctypes": "c = m._ctypes",
    "cffi": "c = m.cffi",
    "CDLL": "lib = loader.CDLL('libc.so.6')",
    "PyDLL": "lib = loader.PyDLL(None)",
    "pythonapi": "api = c.pythonapi",
    "from_address": "v = c_long.from_address(addr)",
    "dlopen": "lib = ffi.dlopen(None)",
    "untyped_storage": "s = x.untyped_storage()",
    "_typed_storage": "s = x._typed_storage()",
    "_untyped_storage": "s = x._untyped_storage",
    "_write_file": "s._write_file(f, True, True, 4)",
    "_set_from_file": "s._set_from_file(f, 0, True, 4)",
    "_new_with_file": "s = S._new_with_file(f, 4)",
    "interpreter_semantic": "sem = interp.interpreter_semantic",
    "_InterpreterComparison": "c = interp._InterpreterComparison",
    "interpreter_builder": "b = interp.interpreter_builder",
    "TensorHandle": "h = interp.TensorHandle",
    "InterpreterBuilder": "b = interp.InterpreterBuilder()",
    "InterpretedFunction": "f = interp.InterpretedFunction",
    "FunctionRewriter": "r = interp.FunctionRewriter",
    "_interpreter": "c = interp._interpreter",
    "GridExecutor": "g = interp.GridExecutor",
    "_patch_lang": "interp._patch_lang(fn)",
    "_patch_builtin": "interp._patch_builtin(m, b)",
    "_patch_attr": "interp._patch_attr(o, 'x', v, b)",
    "_LangPatchScope": "s = interp._LangPatchScope()",
    "_implicit_cvt": "v = interp._implicit_cvt(3)",
    "_patch_lang_core": "interp._patch_lang_core(lang)",
    "_patch_lang_tensor": "interp._patch_lang_tensor(t)",
    "builtins": "b = dataclasses.builtins",
    "rewriter": "kernel.rewriter = mine",
    "rewritten_fn": "kernel.rewritten_fn = mine",
    "from_file": "t = torch.from_file('data.bin', size=4)",
    "_C": "c = m._C",
    "redispatch": "out = ops.redispatch(ks, x)",
    "ExcludeDispatchKeyGuard": "g = m.ExcludeDispatchKeyGuard(k)",
    "DispatchKeySet": "ks = m.DispatchKeySet(k)",
    "DispatchKey": "k = m.DispatchKey",
    "TorchDispatchMode": "class M(TorchDispatchMode):\n    pass",
    "TorchFunctionMode": "class M(TorchFunctionMode):\n    pass",
    "no_dispatch": "with no_dispatch():\n    pass",
    "enable_python_dispatcher": "with m.enable_python_dispatcher():\n    pass",
    "disable_proxy_modes_tracing": "with m.disable_proxy_modes_tracing():\n    pass",
    "_DisableTorchDispatch": "g = m._DisableTorchDispatch()",
    "_DisablePythonDispatcher": "g = m._DisablePythonDispatcher()",
    "_EnablePythonDispatcher": "g = m._EnablePythonDispatcher()",
    "_disable_current_modes": "with m._disable_current_modes():\n    pass",
    "_pop_mode": "mode = m._pop_mode()",
    "_pop_mode_temporarily": "with m._pop_mode_temporarily():\n    pass",
    "_push_mode": "m._push_mode(mode)",
    "_set_torch_dispatch_mode": "m._set_torch_dispatch_mode(None)",
    "_len_torch_dispatch_stack": "n = m._len_torch_dispatch_stack()",
    "_disable_infra_mode": "with m._disable_infra_mode():\n    pass",
    "_unset_infra_mode": "with m._unset_infra_mode():\n    pass",
    "_python_dispatch": "d = m._python_dispatch",
    "_mode_utils": "u = m._mode_utils",
    "_subclasses": "s = m._subclasses",
    "_dispatch": "d = m._dispatch",
}

# module -> an assignment that swaps out part of it (PROTECTED_ROOTS); the finding's code is "<target> = ..."
PROTECTED = {
    "torch": "import torch\ntorch.cuda.synchronize = lambda: None",
    "triton": "import triton\ntriton.cdiv = lambda a, b: 1",
    "tl": "tl.arange = my_arange",
    "time": "import time\ntime.perf_counter = lambda: 0.0",
    "os": "import os\nos.sep = '/'",
    "sys": "import sys\nsys.stdout = open('x', 'w')",
    "math": "import math\nmath.inf = 1.0",
    "numpy": "numpy.add = my_add",
    "np": "np.add = my_add",
    "json": "import json\njson.dumps = lambda o: '{}'",
    "struct": "import struct\nstruct.pack = lambda *a: b''",
}

# A method Triton's launch calls, assigned on an object the scan cannot name.
LAUNCH_METHODS = {
    "to_ir": "def put(m, f):\n    m.to_ir = f",
    "mangle_type": "def put(m, f):\n    m.mangle_type = f",
    "specialize_impl": "def put(m, f):\n    m.specialize_impl = f",
    "native_specialize_impl": "def put(m, f):\n    m.native_specialize_impl = f",
    "data_ptr": "def put(t, f):\n    t.data_ptr = f",
    "untyped_storage": "def put(t, f):\n    t.untyped_storage = f",
    "getcallargs": "def put(m, f):\n    m.getcallargs = f",
    "getfullargspec": "def put(m, f):\n    m.getfullargspec = f",
    "set_grid_idx": "def put(b, f):\n    b.set_grid_idx = f",
    "set_grid_dim": "def put(b, f):\n    b.set_grid_dim = f",
    "get_int1_ty": "def put(b, f):\n    b.get_int1_ty = f",
    "get_int32_ty": "def put(b, f):\n    b.get_int32_ty = f",
    "_patch_lang": "def put(m, f):\n    m._patch_lang = f",
    "_init_args_hst": "def put(m, f):\n    m._init_args_hst = f",
    "_restore_args_dev": "def put(m, f):\n    m._restore_args_dev = f",
    "unwrap_tensor": "def put(m, f):\n    m.unwrap_tensor = f",
    "_unwrap_tensor": "def put(m, f):\n    m._unwrap_tensor = f",
    "_rewrap_tensor": "def put(m, f):\n    m._rewrap_tensor = f",
    "create_*": "def put(b, f):\n    b.create_load = f",
}
LAUNCH_WHY = "replaces a method that Triton's launch calls (on an object the scan cannot name)"

# A class of Triton's language, subclassed.
LANGUAGE_CLASSES = {
    "dtype": "class D(tl.dtype):\n    pass",
    "base_type": "class D(tl.base_type):\n    pass",
    "pointer_type": "class P(tl.pointer_type):\n    pass",
    "block_type": "class B(tl.block_type):\n    pass",
    "tensor": "class T(tl.tensor):\n    pass",
    "constexpr": "class C(tl.constexpr):\n    pass",
    "InterpreterBuilder": "class B(interpreter.InterpreterBuilder):\n    pass",
    "TritonSemantic": "class S(semantic.TritonSemantic):\n    pass",
    "tuple_type": "class T(tl.tuple_type):\n    pass",
    "TensorHandle": "class H(interpreter.TensorHandle):\n    pass",
}

# Reasons the scan gives, written out (each is what a student reads beside the line it refuses).
LIBRARY_WHY = "replaces part of a library the judge relies on"
PASSED_AROUND_WHY = "passes a name-lookup or code-running built-in around"
COMPUTED_NAME_WHY = "reaches an attribute by a computed or private name"
UNKNOWN_SUBJECT_WHY = "may read an attribute the scan forbids (the subject is not a plain name)"
PRIVATE_WHY = "reaches PyTorch's private internals"
FORMAT_FIELD_WHY = "a format string that reads a private or forbidden attribute"
FORMAT_WHY = "formats with a string the scan cannot read (a format string reads attributes by name)"
WRAPS_WHY = "sets attributes by the names it is given (a computed setattr)"

# The rules written as code rather than as a table entry: (snippet, the finding's code, its reason).
STRUCTURAL = [
    ("from . import helpers", "a relative import", "imports from outside the submission file"),
    (
        "import email",
        "import email",
        "a kernel exercise imports only Triton, PyTorch and a few standard modules (math, functools, ...)",
    ),
    ("import torch\nr = torch.nn._reduction", "torch.nn._reduction", PRIVATE_WHY),
    ("import torch._prims", "import torch._prims", PRIVATE_WHY),
    ("from torch.nn import _reduction", "from torch.nn import _reduction", PRIVATE_WHY),
    ("s = fmt.format(x)", ".format", FORMAT_WHY),
    ("s = fmt.format_map(d)", ".format_map", FORMAT_WHY),
    ("data = open('/proc/self/mem', 'rb')", "/proc", "reads the process's memory or descriptors through /proc"),
    ("s = '{0.__class__}'.format(x)", "{...__class__}", FORMAT_FIELD_WHY),
    ("s = '{0:{1._secret}}'.format(x, y)", "{..._secret}", FORMAT_FIELD_WHY),
    (
        "match p:\n    case Point(a, b):\n        pass",
        "a positional class pattern",
        "reads the attributes the class's __match_args__ names",
    ),
    (
        "match p:\n    case object(_secret=s):\n        pass",
        "case ...(_secret=...)",
        "reads an attribute by a private name",
    ),
    ("match p:\n    case object(__class__=k):\n        pass", "case ...(__class__=...)", "walks the class hierarchy"),
    (
        "import os\nmatch os:\n    case object(environ=e):\n        pass",
        "case ...(environ=...)",
        "reads the environment",
    ),
    ("match f():\n    case object(environ=e):\n        pass", "case ...(environ=...)", UNKNOWN_SUBJECT_WHY),
    (
        "import torch\nmatch torch:\n    case object(cuda=object(Stream=s)):\n        pass",
        "case ...(Stream=...)",
        "runs work on a side stream the timer may not see",
    ),
    (
        "import torch\nmatch torch:\n    case object(cuda=object(Stream=s) as c):\n        pass",
        "case ...(Stream=...)",
        "runs work on a side stream the timer may not see",
    ),
    (
        "import torch\nmatch torch:\n    case object(cuda=object(graph=g) | object(Stream=s)):\n        pass",
        "case ...(Stream=...)",
        "runs work on a side stream the timer may not see",
    ),
    (
        "import os\nmatch os:\n    case (object(environ=e) as found) if found:\n        pass",
        "case ...(environ=...)",
        "reads the environment",
    ),
    ("match pair:\n    case [object(environ=e), _]:\n        pass", "case ...(environ=...)", UNKNOWN_SUBJECT_WHY),
    ("match d:\n    case {'k': object(environ=e)}:\n        pass", "case ...(environ=...)", UNKNOWN_SUBJECT_WHY),
    (
        "match p:\n    case Point(x=object(_secret=s)):\n        pass",
        "case ...(_secret=...)",
        "reads an attribute by a private name",
    ),
    ("import os\nmatch x:\n    case os.environ:\n        pass", "os.environ", "reads the environment"),
    ("match f():\n    case object(a=object(environ=e)):\n        pass", "case ...(environ=...)", UNKNOWN_SUBJECT_WHY),
    ("s = '{0._secret}{1}'.format(x, y)", "{..._secret}", FORMAT_FIELD_WHY),
    ("s = '{0._secret:{1}}'.format(x, 5)", "{..._secret}", FORMAT_FIELD_WHY),
    ("run = exec", "exec", PASSED_AROUND_WHY),
    ("look = getattr", "getattr", PASSED_AROUND_WHY),
    ("import torch\nc = getattr(torch, '_' + 'C')", "getattr()", COMPUTED_NAME_WHY),
    ("ok = hasattr(x, '_secret')", "hasattr()", COMPUTED_NAME_WHY),
    ("k = getattr(x, '__class__')", "getattr()", COMPUTED_NAME_WHY),
    ("import os\nenv = getattr(os, 'environ')", "getattr()", "reads the environment"),
    ("import functools\nw = functools.wraps(f, assigned=('__name__',))", "wraps(assigned=/updated=)", WRAPS_WHY),
    ("import functools\nw = functools.wraps(f, updated=())", "wraps(assigned=/updated=)", WRAPS_WHY),
    ("def f():\n    global range\n    range = g", "global range", "rebinds a built-in name that kernels call"),
    ("def f():\n    global __builtins__", "global __builtins__", "reaches the built-ins"),
    ("def __getattr__(name):\n    return 1", "def __getattr__", "reaches attributes by computed names"),
    ("class ForwardRef:\n    pass", "class ForwardRef", "evaluates a string as code"),
    (
        "def f(x: 'not )( an expression'):\n    pass",
        "a string annotation",
        "is not an expression (typing would evaluate it)",
    ),
    ("def f(x: 'os.environ'):\n    pass", "os.environ", "reads the environment"),
    ("v: '__import__' = 1", "__import__", PASSED_AROUND_WHY),
    (
        "BLOCK.value = 64",
        "BLOCK.value = ...",
        "changes a tl.constexpr's value (a kernel reads your file's constants as its source sets them)",
    ),
    ("import torch as t\nt.manual_seed = f", "t.manual_seed = ...", LIBRARY_WHY),
    ("import torch\nc = torch.cuda\nc.synchronize = f", "c.synchronize = ...", LIBRARY_WHY),
    ("import time\nfor time.perf_counter in [f]:\n    pass", "time.perf_counter = ...", LIBRARY_WHY),
    ("import time\nwith ctx() as time.perf_counter:\n    pass", "time.perf_counter = ...", LIBRARY_WHY),
    ("import math\nmath.pi += 1", "math.pi = ...", LIBRARY_WHY),
    ("import math\ndel math.pi", "math.pi = ...", LIBRARY_WHY),
    ("import math\nmath.pi: float = 3.0", "math.pi = ...", LIBRARY_WHY),
    ("import time\nvals = [0 for time.perf_counter in [f]]", "time.perf_counter = ...", LIBRARY_WHY),
    ("import os as o\nv = o.environ['JUDGE_SEED']", "o.environ", "reads the environment"),
    ("from os import environ as e\nv = e['JUDGE_SEED']", "e", "reads the environment"),
    ("import sys\nm = sys\nm.settrace(f)", "m.settrace", "traces the judge's code"),
    ("from os import environ", "from os import environ", "reads the environment"),
    ("from typing import __builtins__", "from typing import __builtins__", "reaches the built-ins"),
    ("import sys.monitoring", "import sys.monitoring", None),  # sys is allowed; its monitoring is no module
]


def _check(source: str, code: str, why: str):
    findings = scan(source)
    assert any(f.code == code and f.why == why for f in findings), (
        f"{source!r} should be refused as {code!r} ({why}); findings: {[f.message() for f in findings]}"
    )
    assert all(f.line >= 1 for f in findings)


@pytest.mark.parametrize("module", list(MODULES))
def test_each_forbidden_module(module):
    source, code = MODULES[module]
    _check(source, code, FORBIDDEN_MODULES[module])


@pytest.mark.parametrize("chain", list(ATTRIBUTES))
def test_each_forbidden_attribute(chain):
    source, code = ATTRIBUTES[chain]
    _check(source, code, FORBIDDEN_ATTRIBUTES[chain])


@pytest.mark.parametrize("call", list(CALLS))
def test_each_forbidden_call(call):
    source, code = CALLS[call]
    _check(source, code, FORBIDDEN_CALLS[call])


@pytest.mark.parametrize("name", list(NAMES))
def test_each_forbidden_name(name):
    _check(NAMES[name], name, FORBIDDEN_NAMES[name])


@pytest.mark.parametrize("root", list(PROTECTED))
def test_each_protected_module(root):
    source = PROTECTED[root]
    target = source.splitlines()[-1].split(" = ")[0]
    _check(source, f"{target} = ...", LIBRARY_WHY)


@pytest.mark.parametrize("method", list(LAUNCH_METHODS))
def test_each_launch_method(method):
    source = LAUNCH_METHODS[method]
    target = source.splitlines()[-1].strip().split(" = ")[0]
    _check(source, f"{target} = ...", LAUNCH_WHY)


@pytest.mark.parametrize("cls", list(LANGUAGE_CLASSES))
def test_each_language_class(cls):
    source = LANGUAGE_CLASSES[cls]
    name = source.split("(")[0].removeprefix("class ")
    _check(
        source,
        f"class {name}({cls})",
        "subclasses a class of Triton's language (its methods run inside the compiler and the interpreter)",
    )


@pytest.mark.parametrize("source,code,why", STRUCTURAL, ids=[s[1] for s in STRUCTURAL])
def test_each_rule_written_as_code(source, code, why):
    findings = scan(source)
    if why is None:  # not refused: what the import does is left to the import itself
        assert findings == [], findings
        return
    assert any(f.code == code and f.why == why for f in findings), [f.message() for f in findings]
    assert all(f.line >= 1 for f in findings), [f.message() for f in findings]


def test_every_rule_has_a_snippet():
    """A rule added to a table needs its own line here (this reads the tables only to find the rules that have
    none)."""
    assert set(FORBIDDEN_MODULES) == set(MODULES)
    assert set(FORBIDDEN_ATTRIBUTES) == set(ATTRIBUTES)
    assert set(FORBIDDEN_CALLS) == set(CALLS)
    assert set(FORBIDDEN_NAMES) == set(NAMES)
    assert set(scan_tables.PROTECTED_ROOTS) == set(PROTECTED)
    assert set(scan_tables.LAUNCH_METHODS) | {"create_*"} == set(LAUNCH_METHODS)
    assert set(scan_tables.LANGUAGE_CLASSES) == set(LANGUAGE_CLASSES)


def test_a_module_that_is_not_installed_is_left_to_the_import():
    # The import fails (CE, "cannot import module"): the scan never turns a typo into RJ.
    assert scan("import torchh") == []
    assert scan("from nosuchmodule_for_the_judge import x") == []


# What a kernel file writes every day must not be refused (a false RJ is the worst outcome for a student).
ORDINARY = [
    "import torch\nimport triton\nimport triton.language as tl\nimport math, functools, itertools",
    "from typing import Optional\nimport dataclasses, enum, collections, abc, contextlib, random, warnings",
    "import copy, heapq, bisect, fractions, decimal, statistics, os, sys, time, struct, io, json, re",
    "from __future__ import annotations\nimport string, array, faulthandler, textwrap, numbers, cmath",
    "import typing_extensions",
    "n = getattr(cfg, 'num_warps', 4)",
    "ok = hasattr(x, 'shape')",
    "s = '{} of {}'.format(a, b)",
    "s = f'{x.shape}'",
    "BLOCK = tl.constexpr(64)",
    "out = torch.empty_like(x)\nout.copy_(y)",
    "grid = lambda meta: (triton.cdiv(n, meta['BLOCK']),)",
    "match shape:\n    case (m, n):\n        pass\n    case int(k):\n        pass",
    "match dims:\n    case [first, *rest]:\n        pass\n    case {'n': n, **others}:\n        pass",
    "import os\nbase = os.path.basename(__file__)",
    "import time\nt0 = time.perf_counter()",
    "import sys\nprint('x', file=sys.stderr)",
    "x = self.value",
    "stride = x.stride(0)\noffset = x.storage_offset()",
    "t = torch.tensor([1.0])\nfrom functools import wraps",
]


@pytest.mark.parametrize("source", ORDINARY)
def test_ordinary_kernel_code_is_not_refused(source):
    assert scan(source) == [], [f.message() for f in scan(source)]


def test_findings_name_their_lines_in_source_order_once_each():
    source = "import os\nx = 1\nv = os.environ['A']\nw = os.environ['B']\nimport gc\n"
    findings = scan(source)
    assert [(f.line, f.code) for f in findings] == [(3, "os.environ"), (4, "os.environ"), (5, "import gc")]
    assert findings[0].message() == f"line 3: os.environ ({FORBIDDEN_ATTRIBUTES['os.environ']})"


def test_an_alias_bound_below_its_use_still_counts():
    source = "def f():\n    c.synchronize = g\nimport torch\nc = torch.cuda\n"
    assert any(f.code == "c.synchronize = ..." for f in scan(source)), scan(source)


def test_a_lifted_rule_is_lifted_only_where_the_problem_lifts_it():
    source = "import torch\nlib = torch.library.Library('mine', 'DEF')\n"
    assert scan(source) != [] and scan(source, ("torch.library",)) == []
    assert scan("import ctypes", ("torch.library",)) != []
    # A lifted module may be imported (it is not "unlisted" either).
    assert scan("import pickle", ("pickle",)) == []


def test_a_module_the_lookup_cannot_place_is_left_to_the_import(monkeypatch):
    import importlib.util

    def cannot(name, *args):
        raise ValueError(f"{name}.__spec__ is None")

    monkeypatch.setattr(importlib.util, "find_spec", cannot)
    assert scan("import somethingodd") == []


def test_a_module_loaded_in_the_judges_process_counts_as_installed(monkeypatch):
    import sys
    import types

    monkeypatch.setitem(sys.modules, "judge_scan_probe", types.ModuleType("judge_scan_probe"))  # no __spec__
    assert [f.why for f in scan("import judge_scan_probe")] == [UNLISTED_WHY]
