"""The trust boundary in the code's structure: what the untrusted side may import.

A sandbox mounts only judge/__init__.py, judge/shared/ and judge/untrusted/
next to the submission, so the worker must never import the trusted judge
(and the judge's secrets, golden models and verdict logic must never be
importable from the submission's process by the worker's own imports).
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SIDES = {
    "judge/untrusted": ("judge.shared", "judge.untrusted"),
    "judge/shared": ("judge.shared",),
}


def _judge_imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "judge"]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "judge":
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return found


@pytest.mark.parametrize("package", sorted(SIDES))
def test_untrusted_and_shared_code_import_nothing_of_the_trusted_judge(package):
    allowed = SIDES[package]
    files = sorted((ROOT / package).glob("*.py"))
    assert files
    bad = [
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for path in files
        for line, name in _judge_imports(path)
        if not name.startswith(allowed)
    ]
    assert not bad, "\n".join(bad)


def test_the_worker_process_loads_no_trusted_module():
    # What is actually imported when the worker starts (imports can hide in functions and in other modules).
    code = (
        "import sys, judge.untrusted.runner, judge.untrusted.bench, judge.untrusted.guard, "
        "judge.untrusted.integrity, judge.untrusted.outputs, judge.untrusted.trace, judge.untrusted.replay;"
        "print('\\n'.join(m for m in sys.modules if m.startswith('judge')))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    loaded = set(out.split())
    trusted = sorted(m for m in loaded if m != "judge" and not m.startswith(("judge.shared", "judge.untrusted")))
    assert not trusted, trusted


def test_the_sandbox_mounts_exactly_the_untrusted_side(tmp_path):
    from judge.sandbox.staging import stage_worker_code

    root = stage_worker_code(tmp_path)
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*.py"))
    assert "judge/__init__.py" in files
    assert all(f == "judge/__init__.py" or f.startswith(("judge/shared/", "judge/untrusted/")) for f in files), files
    assert not (root / "judge" / "session.py").exists() and not (root / "judge" / "rules").exists()
