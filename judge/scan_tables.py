"""The static scan's tables (judge.staticscan reads them): the modules a submission may import, and the
modules, attributes, calls and names it may not use, each with the reason a finding gives."""

import builtins as _builtins

# The modules a submission may import (each with its submodules, less what the lists below forbid): Triton,
# PyTorch, and the parts of the standard library a host function might use. Anything else that is installed
# is refused: a red team of 2026-12-03 reached ctypes through yaml.unsafe_load("!!python/name:...") (any
# loader that resolves names in data is such a door: pickle's kin, pydoc, logging.config, jinja2, sympy's
# eval), so a list of doors to close is never done. A module that is not installed is left to the import,
# which fails (CE, "cannot import module"): the scan never turns a typo into RJ.
ALLOWED_IMPORTS = frozenset({
    "torch", "triton", "math", "cmath", "numbers", "typing", "typing_extensions", "__future__", "functools",
    "itertools", "dataclasses", "enum", "collections", "abc", "contextlib", "random", "warnings", "copy",
    "heapq", "bisect", "fractions", "decimal", "statistics", "os", "sys", "time", "struct", "io", "json", "re",
    "string", "array", "faulthandler", "textwrap",
})
UNLISTED_WHY = "a kernel exercise imports only Triton, PyTorch and a few standard modules (math, functools, ...)"

# module -> why importing it is a rule violation in a kernel exercise
FORBIDDEN_MODULES = {
    "ctypes": "loads native code and pokes at memory",
    "cffi": "loads native code",
    "subprocess": "starts other programs",
    "multiprocessing": "starts other processes",
    "threading": "starts threads (work can hide from the judge there)",
    "_thread": "starts threads",
    "concurrent": "starts threads or processes",
    "socket": "opens network connections",
    "gc": "walks the interpreter's objects",
    "inspect": "inspects the call stack and the judge's frames",
    "importlib": "imports modules by computed names",
    "builtins": "replaces built-in functions",
    "judge": "reaches into the judge's worker",
    "pickle": "runs code hidden in data",
    "marshal": "loads code objects",
    "signal": "changes how the worker is stopped",
    "resource": "changes the worker's limits",
    "mmap": "maps memory directly",
    "numpy": "computes outside your kernels (NumPy)",
    "posix": "reaches the operating system below os",
    "_posixsubprocess": "starts other programs",
    "code": "runs generated code",
    "codeop": "compiles generated code",
    "types": "builds functions and code objects",
    "operator": "reaches attributes by computed names",
    "pydoc": "reaches attributes by computed names (pydoc.locate)",
    "pkgutil": "imports modules by computed names",
    "runpy": "runs other code",
    "copyreg": "runs code hidden in data",
    "unittest": "patches objects by computed names",
    "timeit": "runs generated code",
    "doctest": "runs generated code (its examples)",
    "linecache": "plants source text for generated code",
    "asyncio": "starts threads and processes",
}
# Attribute chains (as written in the source) that are tampering.
FORBIDDEN_ATTRIBUTES = {
    "sys._getframe": "walks the call stack",
    "sys.modules": "swaps modules",
    "sys.settrace": "traces the judge's code",
    "sys.setprofile": "traces the judge's code",
    "sys.path": "changes where modules are imported from (code the scan never read)",
    "sys.meta_path": "changes how modules are imported (code the scan never read)",
    "sys.path_hooks": "changes how modules are imported (code the scan never read)",
    "sys.path_importer_cache": "changes how modules are imported (code the scan never read)",
    "torch.package": "loads code from data (code the scan never read)",
    "torch.hub": "loads code from files (code the scan never read)",
    "torch.jit": "compiles and loads code apart from your kernels",
    "triton.runtime.interpreter": "reaches the interpreter's machinery (memory at any address, a kernel's hooks)",
    "os.environ": "reads the environment",
    "os.getenv": "reads the environment",
    "os.putenv": "changes the environment",
    "os.system": "runs shell commands",
    "os.popen": "runs shell commands",
    "os.fork": "starts processes",
    "os.forkpty": "starts processes",
    "os.kill": "signals processes",
    "os.killpg": "signals processes",
    "os.write": "writes raw file descriptors (the judge's channel)",
    "os.dup": "duplicates file descriptors",
    "os.dup2": "duplicates file descriptors",
    "os.execv": "replaces the process",
    "os.execve": "replaces the process",
    "os.execl": "replaces the process",
    "os.execle": "replaces the process",
    "os.execlp": "replaces the process",
    "os.execlpe": "replaces the process",
    "os.execvp": "replaces the process",
    "os.execvpe": "replaces the process",
    "os.spawnl": "starts processes",
    "os.spawnle": "starts processes",
    "os.spawnlp": "starts processes",
    "os.spawnlpe": "starts processes",
    "os.spawnve": "starts processes",
    "os.spawnvp": "starts processes",
    "os.spawnvpe": "starts processes",
    "os.posix_spawnp": "starts processes",
    "os.spawnv": "starts processes",
    "os.posix_spawn": "starts processes",
    "torch._C": "reaches below PyTorch's public API",
    "torch.utils._python_dispatch": "meddles with PyTorch's dispatcher",
    "torch._dynamo": "meddles with PyTorch's compiler",
    "torch.Tensor._make_subclass": "makes lazy tensor subclasses",
    "torch.cuda.Stream": "runs work on a side stream the timer may not see",
    "torch.cuda.stream": "runs work on a side stream the timer may not see",
    "torch.cuda.CUDAGraph": "replays captured work",
    "torch.cuda.graph": "replays captured work",
    "torch.cuda.set_sync_debug_mode": "changes global CUDA state",
    "torch.set_float32_matmul_precision": "changes global precision settings",
    "torch.use_deterministic_algorithms": "changes global settings the judge relies on",
    "torch.backends": "changes global precision settings",
    "torch.utils.deterministic": "changes global settings the judge relies on",
    "torch.library": "defines operators the judge would take for PyTorch's own",
    "torch.multiprocessing": "starts other processes",
    "torch.ops.load_library": "loads native code",
    "torch.utils.cpp_extension": "builds native code",
    "torch.from_numpy": "computes outside your kernels (NumPy)",
    # PyTorch's dispatch under public names: each switches the judge's operator watch off.
    "torch.ExcludeDispatchKeyGuard": "switches PyTorch's dispatch (and the judge's operator watch) off",
    "torch.DispatchKeySet": "switches PyTorch's dispatch (and the judge's operator watch) off",
    "torch.DispatchKey": "switches PyTorch's dispatch (and the judge's operator watch) off",
    "torch.fx": "meddles with PyTorch's dispatcher",
    "torch.overrides": "meddles with PyTorch's dispatcher",
    "torch.profiler": "meddles with the judge's operator record",
    "torch.autograd.profiler": "meddles with the judge's operator record",
    "torch.ops.profiler": "meddles with the judge's operator record",
    "torch.cuda.set_per_process_memory_fraction": "changes the worker's GPU memory limit",
    "string.Formatter": "reads attributes named in a format string",
    "torch.save": "serializes tensors (their bytes leave PyTorch: computes outside your kernels)",
    "torch.load": "serializes tensors (their bytes leave PyTorch: computes outside your kernels)",
    "torch.serialization": "serializes tensors (their bytes leave PyTorch: computes outside your kernels)",
    "torch.set_printoptions": "changes global settings (how tensors print)",
}
FORBIDDEN_CALLS = {
    "exec": "runs generated code",
    "eval": "runs generated code",
    "compile": "compiles generated code",
    "__import__": "imports modules by computed names",
    "globals": "reaches into module globals",
    "vars": "reaches into object internals",
    "setattr": "changes attributes by name",
    "delattr": "removes attributes by name",
    "breakpoint": "stops the worker",
    "locals": "reaches into frame internals",
}
# getattr(x, name) is fine with a plain public name written out; a computed or
# private name is how the rest of this list is dodged ("_" + "C").
NAME_LOOKUPS = {"getattr", "hasattr"}

# Methods that Triton's launch and its interpreter call on objects a file can reach without naming them (a
# dtype's to_ir, the builder's create_*, the jit module's mangle_type, a tensor's data_ptr): assigned as an
# attribute anywhere (`def put(m, f): m.to_ir = f`), they are refused by name (red team of 2026-12-04).
LAUNCH_METHODS = frozenset({
    "to_ir", "mangle_type", "specialize_impl", "native_specialize_impl", "data_ptr", "untyped_storage",
    "getcallargs", "getfullargspec", "set_grid_idx", "set_grid_dim", "get_int1_ty", "get_int32_ty",
    "_patch_lang", "_init_args_hst", "_restore_args_dev", "unwrap_tensor", "_unwrap_tensor", "_rewrap_tensor",
})
LANGUAGE_CLASSES = frozenset({"dtype", "base_type", "pointer_type", "block_type", "tensor", "constexpr",
                               "InterpreterBuilder", "TritonSemantic", "tuple_type", "TensorHandle"})

BUILTIN_NAMES = frozenset(n for n in dir(_builtins) if not n.startswith("_"))

FORBIDDEN_NAMES = {
    "__torch_function__": "defines a tensor subclass that intercepts PyTorch",
    "__torch_dispatch__": "defines a tensor subclass that intercepts PyTorch",
    "__builtins__": "reaches the built-ins",
    "__subclasses__": "walks the class hierarchy",
    "__globals__": "reaches into function globals",
    "__code__": "rewrites code objects",
    "__self__": "reaches the module or object behind a built-in (e.g. builtins from print)",
    "__dict__": "reaches into object internals",
    "__class__": "walks the class hierarchy",
    "__mro__": "walks the class hierarchy",
    "__bases__": "walks the class hierarchy",
    "__base__": "walks the class hierarchy",
    "__getattribute__": "reaches attributes by computed names",
    "__closure__": "reaches into function internals",
    "__func__": "reaches into method internals",
    "__wrapped__": "unwraps functions the judge wrapped",
    "__import__": "imports modules by computed names",
    "__loader__": "reaches the import machinery",
    "__spec__": "reaches the import machinery",
    "__reduce__": "runs code hidden in data",
    "__setattr__": "changes attributes by name",
    "__delattr__": "removes attributes by name",
    "__annotations__": "holds annotations that typing evaluates as code",
    "get_type_hints": "evaluates annotations as code",
    "update_wrapper": "sets attributes by the names it is given (a computed setattr)",
    "ForwardRef": "evaluates a string as code",
    "__reduce_ex__": "runs code hidden in data",
    "f_back": "walks the call stack",
    "f_globals": "walks the call stack",
    "f_locals": "walks the call stack",
    "gi_frame": "walks the call stack",
    "tb_frame": "walks the call stack",
    "numpy": "computes outside your kernels (NumPy)",
    "np": "computes outside your kernels (NumPy)",
    "tolist": "computes outside your kernels (Python lists)",
    "__array__": "computes outside your kernels (NumPy)",
    "__array_interface__": "computes outside your kernels (NumPy)",
    "__cuda_array_interface__": "hands the memory to other libraries",
    "__dlpack__": "hands the memory to other libraries",
    "from_dlpack": "hands the memory to other libraries",
    "cr_frame": "walks the call stack",
    "ag_frame": "walks the call stack",
    "__getattr__": "reaches attributes by computed names",
    "__match_args__": "reads the attributes a class pattern names",
    "attrgetter": "reaches attributes by computed names",
    "methodcaller": "reaches methods by computed names",
    "import_module": "imports modules by computed names",
    "resolve_name": "imports modules by computed names",
    "get_field": "reads attributes named in a format string",
    "vformat": "reads attributes named in a format string",
    "record_function": "forges entries in the judge's operator record",
    "map_": "runs a Python function per element (computes outside your kernels)",
    "map2_": "runs a Python function per element (computes outside your kernels)",
    "apply_": "runs a Python function per element (computes outside your kernels)",
    "frombuffer": "makes tensors of Python bytes (computes outside your kernels)",
    # ctypes is forbidden as an import, but other modules hold it as an attribute
    # (triton.backends.amd.compiler.ctypes): the name is refused wherever it is written.
    **dict.fromkeys(("ctypes", "_ctypes", "cffi", "CDLL", "PyDLL", "pythonapi", "from_address", "dlopen"),
                    "loads native code and pokes at memory"),
    # A tensor's raw storage, and its file-writing and file-reading methods: its bytes without any operator.
    **dict.fromkeys(("untyped_storage", "_typed_storage", "_untyped_storage", "_write_file", "_set_from_file",
                     "_new_with_file"), "reads or writes a tensor's raw bytes (computes outside your kernels)"),
    # The interpreter's rewrite of a kernel calls back through these names, taken from the kernel's globals
    # (a file's own object under one runs inside its kernels); TensorHandle and the builder reach any address.
    **dict.fromkeys(("interpreter_semantic", "_InterpreterComparison", "interpreter_builder", "TensorHandle",
                     "InterpreterBuilder", "InterpretedFunction", "FunctionRewriter",
                     # the interpreter's own globals, which its rewrite copies into the file's module at a
                     # kernel's first launch (_interpreter: its load and store; red team of 2026-12-04)
                     "_interpreter", "GridExecutor", "_patch_lang", "_patch_builtin", "_patch_attr",
                     "_LangPatchScope", "_implicit_cvt", "_patch_lang_core", "_patch_lang_tensor"),
                    "reaches Triton's interpreter machinery (a kernel's hooks, memory at any address)"),
    # The built-in functions' module under another module's attribute (dataclasses.builtins): a kernel's
    # range or min falls through to it (red team of 2026-12-04).
    "builtins": "reaches the built-in functions (which a kernel calls)",
    # An interpreted kernel runs the code its rewriter made; swapping it runs another body than the source's.
    "rewriter": "rewires what a kernel runs",
    "rewritten_fn": "rewires what a kernel runs",
    "from_file": "maps files into tensors (computes outside your kernels)",
    # PyTorch's dispatch guard and its relatives, under any name or path they are re-exported by.
    **dict.fromkeys((
        "_C", "redispatch", "ExcludeDispatchKeyGuard", "DispatchKeySet", "DispatchKey", "TorchDispatchMode",
        "TorchFunctionMode", "no_dispatch", "enable_python_dispatcher", "disable_proxy_modes_tracing",
        "_DisableTorchDispatch", "_DisablePythonDispatcher", "_EnablePythonDispatcher", "_disable_current_modes",
        "_pop_mode", "_pop_mode_temporarily", "_push_mode", "_set_torch_dispatch_mode", "_len_torch_dispatch_stack",
        "_disable_infra_mode", "_unset_infra_mode", "_python_dispatch", "_mode_utils", "_subclasses", "_dispatch",
    ), "switches PyTorch's dispatch (and the judge's operator watch) off"),
}
# Torch modules and attributes whose name starts with "_" are PyTorch's internals
# (torch._C, torch.utils._python_dispatch, torch._subclasses, ...): many of them
# hold the dispatch guard under yet another name. A submission needs none.
PRIVATE_ROOTS = {"torch"}
# Classes that match a positional pattern against the subject itself (PEP 634);
# any other class reads the attributes its __match_args__ names.
SELF_MATCHING = {"bool", "bytearray", "bytes", "dict", "float", "frozenset", "int", "list", "set", "str", "tuple"}
# Assigning to an attribute of these modules (torch.cuda.synchronize = ...)
# swaps out the judge's own tools or the clock.
PROTECTED_ROOTS = {"torch", "triton", "tl", "time", "os", "sys", "math", "numpy", "np", "json", "struct"}
