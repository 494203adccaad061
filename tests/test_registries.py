"""The extension points work as the docs say: a backend or a rule is one module plus one registry line.

The examples are taken from the docs page itself (docs/design/extending.md), so the documentation cannot
drift from the code: each is loaded as the module it claims to be, registered
with its one line, and then used for real.
"""

import re
import shutil
import sys
import types
from pathlib import Path

import pytest

from judge import rules, sandbox
from judge.problems import find_problem

EXTENDING = (Path(__file__).resolve().parents[1] / "docs" / "design" / "extending.md").read_text()


def _example(first_line: str, module_name: str, monkeypatch):
    code = next(block for block in re.findall(r"```python\n(.*?)```", EXTENDING, re.S) if block.startswith(first_line))
    module = types.ModuleType(module_name)
    exec(compile(code, first_line.lstrip("# "), "exec"), module.__dict__)  # noqa: S102 - our own docs
    monkeypatch.setitem(sys.modules, module_name, module)
    return module


def test_the_readme_backend_is_one_file_and_one_line(monkeypatch):
    _example("# judge/sandbox/unshare.py", "judge.sandbox.unshare", monkeypatch)
    monkeypatch.setitem(sandbox.BACKENDS, "unshare", "judge.sandbox.unshare:UnshareBackend")
    assert "unshare" in sandbox.backend_names()
    assert "unshare: no network" in sandbox.describe()
    backend = sandbox.get_backend("unshare")
    if backend.unavailable() or not shutil.which("unshare"):
        pytest.skip("unshare is not usable here")
    from judge.options import Options
    from judge.session import Session

    p = find_problem("93")
    report = Session(p, p.reference_path, Options(sandbox="unshare", seed=1, quick=True)).run()
    assert report.mode["sandbox"] == "unshare"
    if report.verdict.value == "IE" and "unshare" in report.message:
        pytest.skip(f"unshare cannot create namespaces here: {report.message}")
    assert report.verdict.value == "AC", report.message


def test_the_readme_rule_is_one_file_and_one_line(monkeypatch):
    from types import MappingProxyType

    from judge.replies.records import Evidence

    _example("# judge/rules/launch_storm.py", "judge.rules.launch_storm", monkeypatch)
    monkeypatch.setattr(rules, "RULES", rules.RULES + ("launch_storm",))
    monkeypatch.setattr(rules, "_loaded", None)
    storm = Evidence(own_launches=MappingProxyType({"k": 20_000}))
    found = rules.violation(storm, (), rules.Context(file="x.py"))
    assert found is not None and "20000 kernels" in found.message
    assert rules.violation(Evidence(own_launches=MappingProxyType({"k": 3})), (), rules.Context(file="x.py")) is None
    monkeypatch.setattr(rules, "_loaded", None)  # the next test sees the real rulebook again
