"""What the last mutation run (tests/mutation/run.sh) found, per module; exit 1 below the bar.

Reads mutmut's results (mutants/**/*.py.meta) and tests/mutation/equivalent.toml, the mutants that cannot change
behaviour, each with its reason. A mutant is killed when a test failed (or timed out) with it; it survived when every
test passed, or when no test reaches its function. The bar: at least 90% of the mutants that are not equivalent
are killed. Prints the survivors that are not equivalent (`python -m mutmut show NAME` shows one's change), and
the equivalent entries that no longer name a surviving mutant (stale: the code changed under them).
"""

from __future__ import annotations

import json
import sys
import tomllib
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BAR = 0.90
KILLED = {1, 3, 36, 24, -24, 152, 255, 37}  # a test failed, pytest broke, a timeout (mutmut's codes), type check
SURVIVED = {0}
NO_TESTS = {5, 33}


def load_results(root: Path = ROOT) -> dict[str, dict[str, int | None]]:
    """module path -> {mutant name: mutmut's exit code}."""
    out = {}
    for meta in sorted((root / "mutants").rglob("*.py.meta")):
        module = str(meta.relative_to(root / "mutants")).removesuffix(".meta")
        out[module] = json.loads(meta.read_text())["exit_code_by_key"]
    return out


def load_equivalent(path: Path = ROOT / "tests" / "mutation" / "equivalent.toml") -> dict[str, str]:
    if not path.exists():
        return {}
    return {name: why for table in tomllib.loads(path.read_text()).values() for name, why in table.items()}


def status(code) -> str:
    if code in KILLED:
        return "killed"
    if code in SURVIVED:
        return "survived"
    if code in NO_TESTS:
        return "no tests"
    return "not run" if code is None else f"other ({code})"


def main() -> int:
    results = load_results()
    if not results:
        print("no results: run tests/mutation/run.sh first", file=sys.stderr)
        return 2
    equivalent = load_equivalent()
    rows, survivors, seen, not_run = [], defaultdict(list), set(), set()
    totals = Counter()
    for module, codes in results.items():
        c = Counter()
        for name, code in codes.items():
            s = status(code)
            if s == "not run":
                not_run.add(name)
            if s in ("survived", "no tests") and name in equivalent:
                s = "equivalent"
                seen.add(name)
            elif s in ("survived", "no tests"):
                survivors[module].append(f"{name}  ({s})")
            c[s] += 1
        totals.update(c)
        rows.append((module, c))
    print(f"{'module':32} {'mutants':>7} {'killed':>7} {'survived':>8} {'no tests':>8} {'equiv.':>6} {'killed %':>8}")
    for module, c in rows + [("all", totals)]:
        counted = sum(c.values()) - c["equivalent"] - c["not run"]
        share = c["killed"] / counted if counted else 1.0
        print(
            f"{module:32} {sum(c.values()):7} {c['killed']:7} {c['survived']:8} {c['no tests']:8} "
            f"{c['equivalent']:6} {100 * share:7.1f}%"
        )
    for module, names in survivors.items():
        print(f"\nsurvivors in {module} ({len(names)}):")
        for name in names:
            print(f"  {name}")
    stale = sorted(set(equivalent) - seen - not_run)  # a mutant not run this time may still be equivalent
    if stale:
        print(f"\nequivalent.toml entries that name no surviving mutant now ({len(stale)}): check or remove them")
        for name in stale:
            print(f"  {name}")
    counted = sum(totals.values()) - totals["equivalent"] - totals["not run"]
    share = totals["killed"] / counted if counted else 1.0
    if totals["not run"]:
        print(
            f"\n{totals['not run']} mutants not run (an interrupted run, or a run of chosen mutants): the share "
            "is of those run; run tests/mutation/run.sh again for all of them"
        )
    print(
        f"\nkilled {totals['killed']} of {counted} non-equivalent mutants ({100 * share:.1f}%; the bar is "
        f"{100 * BAR:.0f}%)"
    )
    return 0 if share >= BAR and not totals["not run"] else 1


if __name__ == "__main__":
    sys.exit(main())
