"""Usage errors and files refused from their source are answered before torch is imported.

Each command runs the real CLI in a fresh process whose import system stops the
process (exit 99) the moment anything imports torch or triton: the answer must
come without them. How fast that is, is measured by tests/bench/instant_errors.py
(a benchmark, not a timed test). Also here: the entry-point check read from the
syntax tree (judge.precheck.entry_point), and the report of a refused file built
without a Session (judge.intake.refused_report) agreeing with the Session's.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from judge import precheck
from judge.cli_common import torch_has_cuda
from judge.problems import find_problem

ROOT = Path(__file__).resolve().parent.parent
VECTOR_ADD = find_problem("93")
SOFTMAX = find_problem("94")
CORPUS = VECTOR_ADD.directory / "submissions"
GOOD = CORPUS / "accepted" / "masked_block.py"

NO_TORCH = textwrap.dedent("""
    import os, sys

    class NoTorch:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("torch", "triton"):
                os.write(2, f"SENTINEL: {name} imported\\n".encode())
                os._exit(99)
            return None

    sys.meta_path.insert(0, NoTorch())
    sys.argv = ["judge", *sys.argv[1:]]
    from judge.cli import main
    main()
""")


def judge_without_torch(*args):
    return subprocess.run(
        [sys.executable, "-c", NO_TORCH, *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )


def one_line(stderr: str) -> str:
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def write(tmp_path, name, content) -> Path:
    path = tmp_path / name
    (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)
    return path


def test_the_sentinel_stops_a_run_that_imports_torch():
    r = judge_without_torch("submit", "93", GOOD, "--sandbox", "process", "--device", "cpu")
    assert r.returncode == 99 and "SENTINEL" in r.stderr


@pytest.mark.parametrize(
    "args, needle",
    [
        (("submit", "999", GOOD), "unknown problem '999'"),
        (("submit", "93", "no/such/file.py"), "no such file"),
        (("submit", "93", ROOT), "is a directory"),
        (("submit", "93", GOOD, "--device", "tpu"), "tpu"),
        (("submit", "93", GOOD, "--no-such-option"), "no-such-option"),
        (("submit", "93", GOOD, "--sandbox", "chroot"), "valid: auto, docker, bwrap, process"),
        (("test", "93", GOOD, "--group", "small-ragged", "--case", "{bad"), "not valid JSON"),
        (("test", "93", GOOD, "--group", "nope"), "unknown group 'nope'"),
        (("test", "93", GOOD, "--group", "small-ragged", "--case", '{"n": 5, "seed": 1}'), "lacks"),
        (("test", "93", GOOD, "--save-case", GOOD), "is a file"),
        (("bench", "101", GOOD), "answered by hand"),
        (("bench", "93", GOOD, "--shapes", "x"), "--shapes"),
    ],
)
def test_usage_errors_come_without_torch(args, needle):
    r = judge_without_torch(*args)
    assert r.returncode == 2, r.stderr
    assert needle in one_line(r.stderr)


@pytest.mark.skipif(torch_has_cuda() is not False, reason="needs a CPU build of torch")
def test_device_cuda_without_a_gpu_is_a_usage_error_without_torch():
    r = judge_without_torch("submit", "93", GOOD, "--device", "cuda", "--sandbox", "process")
    assert r.returncode == 2 and "no CUDA GPU" in one_line(r.stderr)


REFUSED = {
    "syntax": ("def add(x, y:\n    return x\n", "CE", "syntax error in syntax.py, line 1"),
    "empty": ("\n\n", "CE", "is empty"),
    "binary": (b"\x7fELF\x00\x01\x02", "CE", "binary file"),
    "not_utf8": (b"# caf\xe9\ndef add(x, y):\n    return x\n", "CE", "not valid UTF-8"),
    # In UTF-7 "+AAo-" is a newline: a comment to the scan, an import of gc to Python (red team 4).
    "cookie": (b"# coding: utf-7\n# +AAo-import gc\ndef add(x, y):\n    return x\n", "CE", "encoding utf-7"),
    "missing": ("def vector_add(x, y):\n    return x\n", "CE", "does not define 'add'"),
    "arity": ("def add(xy):\n    return xy\n", "CE", "must accept 2 positional arguments"),
    "scan": ("import gc\n\ndef add(x, y):\n    return x\n", "RJ", "import gc"),
    # A byte-order mark is no character to Python: the scan reads what follows it (red team 4).
    "bom_scan": (b"\xef\xbb\xbfimport gc\n\ndef add(x, y):\n    return x\n", "RJ", "import gc"),
    "bom_arity": (b"\xef\xbb\xbfdef add(xy):\n    return xy\n", "CE", "must accept 2 positional arguments"),
}


@pytest.mark.parametrize("kind", sorted(REFUSED))
@pytest.mark.parametrize("as_json", [False, True])
def test_a_file_refused_from_its_source_is_answered_without_torch(tmp_path, kind, as_json):
    content, verdict, needle = REFUSED[kind]
    path = write(tmp_path, f"{kind}.py", content)
    r = judge_without_torch("submit", "93", path, "--sandbox", "process", *(["--json"] if as_json else []))
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr and "SENTINEL" not in r.stderr
    if as_json:
        report = json.loads(r.stdout)  # the report and nothing else
        assert report["verdict"] == verdict and needle in report["message"]
        assert report["score"] == 0 and report["mode"]["device"] in ("cpu", "cuda")
        assert all(g["skipped"] and g["verdict"] == verdict for g in report["groups"])
    else:
        assert f"{verdict} " in r.stdout and needle in r.stdout and "score 0 /" in r.stdout


def test_a_byte_order_mark_is_read_as_python_reads_it(tmp_path):
    """An honest file saved with a UTF-8 byte-order mark goes on to the worker (red team 4: a false CE before);
    every reader of the submission's text (the precheck, the scan, the worker's copy, the replay's kernels)
    drops the mark as Python's import does."""
    from judge.intake import check_source
    from judge.shared import kernel_source

    bom = CORPUS / "accepted" / "redteam4_utf8_bom.py"
    assert bom.read_bytes().startswith(b"\xef\xbb\xbf")  # the corpus file keeps its mark
    assert precheck.check_source(bom) == (None, None)
    assert check_source(bom, entry="add", arity=2) is None
    text = kernel_source.read_source(bom)
    assert not text.startswith("\ufeff") and kernel_source.kernel_names(text) == ["add_kernel"]
    twice = write(tmp_path, "twice.py", b"\xef\xbb\xbf\xef\xbb\xbfdef add(x, y):\n    return x\n")
    reason, _ = precheck.check_source(twice)  # Python refuses a second mark too
    assert reason is not None and "U+FEFF" in reason


def test_bench_refuses_a_syntax_error_without_torch(tmp_path):
    path = write(tmp_path, "softmax.py", "def softmax(x:\n")
    r = judge_without_torch("bench", "94", path, "--json", "--sandbox", "process")
    assert r.returncode == 1, r.stderr
    report = json.loads(r.stdout)
    assert report["verdict"] == "CE" and "syntax error" in report["message"]
    assert report["mode"]["sandbox"] == "process"


def test_an_answers_problem_is_judged_without_torch(tmp_path):
    path = write(tmp_path, "grid.toml", "this is not toml = = =\n")
    r = judge_without_torch("submit", "101", path, "--json")
    assert r.returncode == 1, r.stderr
    assert json.loads(r.stdout)["verdict"] == "CE"


def test_the_cli_refusal_matches_the_sessions(tmp_path):
    """The report the CLI builds without torch is the one a Session gives (grading takes that path)."""
    from judge.intake import check_source, refused_report
    from judge.options import Options
    from judge.session import Session

    for kind in ("syntax", "arity", "scan"):
        content, _, _ = REFUSED[kind]
        path = write(tmp_path, f"{kind}.py", content)
        options = Options(device="cpu", interpret=True, sandbox="process", seed=7, quick=True)
        by_session = Session(VECTOR_ADD, path, options).run().to_json()
        refusal = check_source(path, entry=VECTOR_ADD.entry_point, arity=VECTOR_ADD.arity)
        mode = {"device": "cpu", "interpret": True, "sandbox": "process", "quick": True}
        by_cli = refused_report(
            VECTOR_ADD, path, refusal, groups=VECTOR_ADD.groups, mode=mode, seed=7, elapsed=0.0
        ).to_json()
        for key in ("notes", "timing", "elapsed_seconds", "worker"):
            by_session.pop(key), by_cli.pop(key)
        assert by_cli == by_session


# ---------------------------------------------------------------------- the entry point, from the syntax tree


def entry(source: str, name="add", arity=2):
    return precheck.entry_point(textwrap.dedent(source), "sub.py", name, arity)


@pytest.mark.parametrize(
    "source",
    [
        "def add(x, y):\n    return x\n",
        "def add(x, y, block=1024):\n    return x\n",
        "def add(x, *rest):\n    return x\n",
        "def add(*args, **kw):\n    return 0\n",
        "def add(x, y, /):\n    return x\n",
        "def add(x, y, *, block=4):\n    return x\n",
        "def add(x):\n    return x\n\ndef add(x, y):\n    return y\n",  # the last definition counts
    ],
)
def test_a_fitting_entry_point_passes(source):
    assert entry(source) is None


@pytest.mark.parametrize(
    "source",
    [
        "add = lambda x, y: x\n",
        "def _impl(x, y):\n    return x\nadd = _impl\n",
        "from helper import add\n",
        "import helper as add\n",
        "from helper import *\n",
        "if True:\n    def add(x, y):\n        return x\n",
        "try:\n    from fast import add\nexcept ImportError:\n    pass\n",
        "def make():\n    global add\n    add = print\nmake()\n",
        "globals()['add'] = print\n",
        "def __getattr__(name):\n    return print\n",
        "class add:\n    def __init__(self, x, y):\n        pass\n",
        "import functools\n@functools.lru_cache\ndef add(xy):\n    return xy\n",  # a decorator: the worker decides
        "def add(xy):\n    return xy\nadd = print\n",
        "(add := print)\n",
    ],
)
def test_an_entry_point_bound_any_other_way_goes_to_the_worker(source):
    assert entry(source) is None


def test_a_missing_entry_point_is_named():
    kind, message, line = entry("def vector_add(x, y):\n    return x\n")
    assert kind == "MissingEntryPoint" and line is None
    assert message == "sub.py does not define 'add'; expected def add(arg0, arg1)"


@pytest.mark.parametrize(
    "source, found",
    [
        ("def add(xy):\n    return xy\n", "def add(xy)"),
        ("def add(x, y, z):\n    return x\n", "def add(x, y, z)"),
        ("def add(x, y, *, block):\n    return x\n", "def add(x, y, *, block)"),
        ("def add(x, y):\n    return x\n\ndef add(x):\n    return x\n", "def add(x)"),
    ],
)
def test_a_wrong_arity_is_named_with_its_line(source, found):
    kind, message, line = entry(source)
    assert kind == "WrongArity" and message.endswith(f"found {found}")
    assert "'add' must accept 2 positional arguments: expected def add(arg0, arg1)" in message
    assert line == source.count("\n", 0, source.rindex("def add")) + 1


def test_the_worker_would_have_said_the_same():
    """Every corpus file the precheck refuses for its entry point is a compile error whose expected message the
    precheck gives; every other corpus file and reference passes it."""
    from judge.problems import all_problems

    for problem in all_problems():
        if problem.kind != "kernel":
            continue
        for verdict, path in list(problem.corpus()) + [("AC", problem.reference_path)]:
            if precheck.check_source(path)[0]:
                continue  # not Python source at all: refused before the entry point is looked for
            text = path.read_text()
            found = precheck.entry_point(text, path.name, problem.entry_point, problem.entry_arity)
            if found is None:
                continue
            assert verdict == "CE", path
            expect = [ln.split("expect:", 1)[1].strip() for ln in text.splitlines() if "expect:" in ln]
            assert expect and all(e in found[1] for e in expect), (path, found)
