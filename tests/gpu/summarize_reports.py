"""One line per JSON report from `judge submit --json`: problem, verdict,
score and each group's verdict; a report that is missing or unreadable is
shown with the end of its stderr (the .err file beside it)."""

import json
import sys
from pathlib import Path

for name in sys.argv[1:]:
    path = Path(name)
    try:
        report = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        err = path.with_suffix(".err")
        tail = err.read_text()[-600:] if err.exists() else ""
        print(f"{path.stem}: not AC (no report: {exc}) {tail}")
        continue
    problem = report.get("problem")
    pid = problem.get("id") if isinstance(problem, dict) else problem
    groups = " ".join(f"{g['name']}={g['verdict']}" for g in report.get("groups", []))
    mark = "AC" if report.get("verdict") == "AC" else "not AC"
    print(
        f"{pid or path.stem}: {mark} verdict={report.get('verdict')} "
        f"score={report.get('score')}/{report.get('max_score')} {groups} :: {report.get('message', '')[:300]}"
    )
