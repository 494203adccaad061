"""Mutants mutmut cannot make, made by hand: each must make one of its tests fail.

mutmut mutates the code inside functions and methods. It leaves alone what the core mechanisms keep in tables at
module level (the verdicts' order and flags, the static scan's rules, the rulebook's maps, the quantiles), in
decorated functions (the report's properties, the store's locked methods) and in strings (the store's SQL); and
a realistic slip is often a change of one value for another that no mutation operator makes (a mean for a median,
one limit for another). Each entry below is such a change: the file, the exact text it replaces and with what,
and the tests that must fail with it. Issue 44's seven changes are the first seven.

    python tests/mutation/hand.py            # all of them, in a copy of the tree (the tree is never changed)
    python tests/mutation/hand.py --fast     # without the ones that judge a file in the interpreter
    python tests/mutation/hand.py median     # only those whose description says "median"

Exit 0 when every mutant is killed; 1 when one survived (its test no longer guards its promise), or when an
entry's text is no longer in its file (the code moved: update the entry).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Mutant:
    path: str
    old: str
    new: str
    why: str  # what the change breaks
    tests: tuple[str, ...]
    slow: bool = False  # judges a file in the interpreter (tens of seconds; minutes with the mutant)


V = "tests/test_promises_verdicts.py"
STORE = "tests/test_promises_store.py"
SCAN = "tests/test_promises_scan.py"
TIMING = "tests/test_promises_timing.py"
RUBRIC = "tests/test_promises_rubric.py"
RULES = "tests/test_promises_rules.py"
LIMITS_E2E = (
    "tests/test_promises_limits.py::test_a_case_past_the_per_case_limit_is_tle_within_that_limit_not_the_run_limit"
)
NOT_RUN_E2E = "tests/test_promises_limits.py::test_after_a_group_that_ends_the_run_the_later_groups_are_not_run"

MUTANTS = [
    # Issue 44's seven.
    Mutant(
        "judge/verdicts.py",
        "Verdict.OLE, Verdict.RTE, Verdict.WA]",
        "Verdict.OLE, Verdict.WA, Verdict.RTE]",
        "RTE and WA swapped in the verdict priority",
        (V,),
    ),
    Mutant(
        "judge/verdicts.py",
        "if self.verdict in (Verdict.RJ, Verdict.IE) or not self.groups:",
        "if self.verdict in (Verdict.IE,) or not self.groups:",
        "a rejected file keeps its points",
        (V,),
    ),
    Mutant(
        "judge/grading/store.py",
        "WHERE id = ? AND status != 'done'\",",
        'WHERE id = ?",',
        "a job finished twice: the second report replaces the first",
        (STORE,),
    ),
    Mutant(
        "judge/exchange.py",
        "timeout=self.job.limits.case_seconds,",
        "timeout=self.job.limits.startup_seconds,",
        "a case waited for with the start-up limit, not case_seconds",
        (LIMITS_E2E,),
        slow=True,
    ),
    Mutant(
        "judge/timing/stats.py",
        "return math.log(median(ref_times) / median(sub_times))",
        "return math.log(sum(ref_times) / len(ref_times) / (sum(sub_times) / len(sub_times)))",
        "a round's ratio of means, not of medians",
        (TIMING,),
    ),
    Mutant(
        "judge/scan_tables.py",
        '    "sys.settrace": "traces the judge\'s code",\n',
        "",
        "the scan's sys.settrace rule deleted",
        (SCAN,),
    ),
    Mutant(
        "judge/verdicts.py",
        'Verdict.TLE: ("time limit exceeded", "time_limit_exceeded", True)',
        'Verdict.TLE: ("time limit exceeded", "time_limit_exceeded", False)',
        "a TLE group no longer stops the later groups",
        (V, NOT_RUN_E2E + "[TLE]"),
    ),
    # More of their kind.
    Mutant(
        "judge/verdicts.py",
        'Verdict.RJ: ("rejected (rule violation)", "rejected", True)',
        'Verdict.RJ: ("rejected (rule violation)", "rejected", False)',
        "an RJ group no longer stops the later groups",
        (V,),
    ),
    Mutant(
        "judge/verdicts.py",
        "Verdict.CE, Verdict.TLE, Verdict.MLE",
        "Verdict.CE, Verdict.MLE, Verdict.TLE",
        "MLE outranks TLE",
        (V,),
    ),
    Mutant(
        "judge/verdicts.py",
        'if not self.speed.get("scored") or not all(g.passed for g in self.groups):',
        'if not self.speed.get("scored"):',
        "speed points without every group passed",
        (V,),
    ),
    Mutant(
        "judge/verdicts.py",
        "return self.points if self.passed else 0.0",
        "return self.points",
        "a failed group earns its points",
        (V,),
    ),
    Mutant(
        "judge/verdicts.py",
        "ZERO_SCORE = frozenset({Verdict.RJ, Verdict.IE})",
        "ZERO_SCORE = frozenset({Verdict.IE})",
        "the rubric lets a rejected file keep its points",
        (RUBRIC,),
    ),
    Mutant(
        "judge/grading/rubric.py",
        "if verdict not in ZERO_SCORE:",
        'if verdict not in ZERO_SCORE | {"WA"}:',
        "a hidden group's verdict shown to a student",
        (RUBRIC,),
    ),
    Mutant(
        "judge/grading/store.py",
        '               WHERE results.verdict = \'IE\' OR results.regrade < excluded.regrade""",',
        '               """,',
        "a rerun overwrites a stored result",
        (STORE,),
    ),
    Mutant(
        "judge/grading/store.py",
        "FROM results WHERE verdict != 'IE'\")",
        'FROM results")',
        "an internal error counted as done: never judged again",
        (STORE,),
    ),
    Mutant(
        "judge/grading/store.py",
        "ORDER BY (SELECT COUNT(*) FROM jobs r WHERE r.student = j.student AND "
        "r.status = 'running'),\n                            j.regrade > 0, j.seq",
        "ORDER BY j.regrade > 0, j.seq",
        "the queue no longer fair between students",
        (STORE,),
    ),
    Mutant(
        "judge/grading/store.py",
        "cached = ?, seed = NULL, ",
        "cached = ?, ",
        "a job's seed kept after it is done",
        (STORE,),
    ),
    Mutant(
        "judge/rules/__init__.py",
        '"timeout": Verdict.TLE,',
        '"timeout": Verdict.RTE,',
        "a worker that ran out of time is RTE",
        (RULES,),
    ),
    Mutant(
        "judge/rules/__init__.py",
        '"rule": Verdict.RJ,',
        '"rule": Verdict.RTE,',
        "a rule the worker found broken is RTE",
        (RULES,),
    ),
    Mutant(
        "judge/scan_tables.py", '    "eval": "runs generated code",\n', "", "the scan's eval() rule deleted", (SCAN,)
    ),
    Mutant(
        "judge/scan_tables.py", '    "f_back": "walks the call stack",\n', "", "the scan's f_back rule deleted", (SCAN,)
    ),
    Mutant(
        "judge/scan_tables.py",
        '"time", "os", "sys", "math"',
        '"os", "sys", "math"',
        "the clock may be swapped out",
        (SCAN,),
    ),
    Mutant("judge/timing/stats.py", "2.571, 2.447", "2.447, 2.447", "a wrong t quantile", (TIMING,)),
]


def _copy_tree(into: Path) -> None:
    for name in ("judge", "problems", "reference"):
        shutil.copytree(ROOT / name, into / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "tests", into / "tests", ignore=shutil.ignore_patterns("__pycache__", "gpu", "bench"))
    shutil.copy2(ROOT / "pyproject.toml", into / "pyproject.toml")


def run(mutants: list[Mutant]) -> int:
    survived = missing = 0
    with tempfile.TemporaryDirectory(prefix="judge-hand-mutants-") as tmp:
        tree = Path(tmp)
        _copy_tree(tree)
        env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
        for m in mutants:
            target = tree / m.path
            original = target.read_text()
            if original.count(m.old) != 1:
                print(f"MISSING   {m.path}: the text to change is not there once: update the entry ({m.why})")
                missing += 1
                continue
            target.write_text(original.replace(m.old, m.new))
            t0 = time.monotonic()
            try:
                r = subprocess.run(
                    [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", *m.tests],
                    cwd=tree,
                    env=env,
                    capture_output=True,
                    text=True,
                )
            finally:
                target.write_text(original)
            took = time.monotonic() - t0
            if r.returncode == 1:
                print(f"killed    {m.path}: {m.why} ({took:.0f} s)")
            else:
                survived += 1
                print(f"SURVIVED  {m.path}: {m.why} (pytest exit {r.returncode}, {took:.0f} s)")
                print("\n".join("          " + ln for ln in r.stdout.splitlines()[-5:]))
    print(f"\n{len(mutants) - survived - missing} of {len(mutants)} killed")
    return 1 if survived or missing else 0


if __name__ == "__main__":
    words = [a for a in sys.argv[1:] if not a.startswith("--")]
    chosen = [
        m
        for m in MUTANTS
        if not (m.slow and "--fast" in sys.argv[1:]) and (not words or any(w in m.why for w in words))
    ]
    sys.exit(run(chosen))
