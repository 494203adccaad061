#!/usr/bin/env python3
"""Judge files with the static scan off on a GPU, so that the worker's runtime checks are what stops them
(as tests/test_anticheat_runtime.py does in the interpreter). Prints one line per file: its verdict, whether
the message holds the file's `# expect-gpu:` text (where it has one), and the message; only the group NOSCAN_GROUP
(default small-ragged; empty: every group). The problem is the
number that starts the file's folder (problems/093-vector-add/...) or its name (tests/gpu/probes/093_...).

    python3 tests/gpu/probes/judge_without_scan.py FILE [FILE ...]
"""

import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from judge.options import Options  # noqa: E402
from judge.problems import find_problem  # noqa: E402
from judge.session import Session  # noqa: E402


def main() -> int:
    files = sys.argv[1:]
    bad = 0
    for f in files:
        text = Path(f).read_text()
        m = re.search(r"^# expect-gpu: (.*)$", text, re.M)
        path = Path(f).resolve()
        number = re.match(r"(\d{3})[-_]", path.name) or next(
            (re.match(r"(\d{3})-", p.name) for p in path.parents if re.match(r"\d{3}-", p.name)), None
        )
        pid = str(int(number.group(1)))
        expect = m.group(1).strip() if m else None
        t = time.perf_counter()
        options = Options(
            sandbox="process",
            seed=1,
            device="cuda",
            interpret=False,
            static_scan=False,
            group=os.environ.get("NOSCAN_GROUP", "small-ragged") or None,
        )
        report = Session(find_problem(pid), Path(f), options).run()
        ok = report.verdict.value != "AC" and (expect is None or expect in (report.message or ""))
        bad += not ok
        print(
            f"{'ok ' if ok else 'BAD'} {report.verdict.value} {Path(f).name} ({time.perf_counter() - t:.1f} s)"
            f" expect={expect!r}: {(report.message or '')[:400]}",
            flush=True,
        )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
