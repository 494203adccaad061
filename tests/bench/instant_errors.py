"""How fast the judge answers what needs no worker: usage errors and files refused from their source.

    python tests/bench/instant_errors.py [--runs 7] [--sandbox process] [--markdown FILE]

Each case is a fresh `python -m judge ...` process (the command a student
runs), timed from spawn to exit, ``--runs`` times, interleaved (one run of
every case, then the next round), so a burst of load on a shared machine
falls on every case alike. The table gives the median, min and max wall
time, the exit code and whether torch was imported (``python -X importtime``
in one more run of each case). The target (issue 14): each answers within
1.5 s on the 2-core development machine. As a yardstick the last row times
`python -c "import torch"` alone: what every one of these paid before.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VECTOR_ADD = ROOT / "problems" / "093-vector-add" / "submissions"
SOFTMAX_REF = ROOT / "reference" / "094-softmax.py"


def cases(tmp: Path, sandbox: str) -> list[tuple[str, list[str], int]]:
    """(name, argv after `python`, the exit code it must give)."""
    syntax = tmp / "softmax_syntax.py"
    syntax.write_text("import triton\n\ndef softmax(x:\n    return x\n")
    judge = [sys.executable, "-m", "judge"]
    return [
        ("syntax error (submit 94)", judge + ["submit", "94", str(syntax), "--sandbox", sandbox], 1),
        ("unknown problem", judge + ["submit", "999", str(SOFTMAX_REF), "--sandbox", sandbox], 2),
        ("bad option (--device tpu)", judge + ["submit", "94", str(SOFTMAX_REF), "--device", "tpu"], 2),
        ("unknown option (--no-such-option)", judge + ["submit", "94", str(SOFTMAX_REF), "--no-such-option"], 2),
        ("bad --sandbox (chroot)", judge + ["submit", "94", str(SOFTMAX_REF), "--sandbox", "chroot"], 2),
        (
            "missing entry point (submit 93)",
            judge
            + ["submit", "93", str(VECTOR_ADD / "compile_error" / "missing_entry_point.py"), "--sandbox", sandbox],
            1,
        ),
        (
            "wrong arity (submit 93)",
            judge + ["submit", "93", str(VECTOR_ADD / "compile_error" / "wrong_arity.py"), "--sandbox", sandbox],
            1,
        ),
        (
            "static-scan RJ (submit 93)",
            judge + ["submit", "93", str(VECTOR_ADD / "rejected" / "exploit_gc_walk.py"), "--sandbox", sandbox],
            1,
        ),
        ("syntax error, --json (submit 94)", judge + ["submit", "94", str(syntax), "--json", "--sandbox", sandbox], 1),
        ("syntax error (bench 94)", judge + ["bench", "94", str(syntax), "--sandbox", sandbox], 1),
        ("yardstick: import torch", [sys.executable, "-c", "import torch"], 0),
    ]


def run_once(argv: list[str]) -> tuple[float, int]:
    t0 = time.monotonic()
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    return time.monotonic() - t0, proc.returncode


def imports_torch(argv: list[str]) -> bool:
    proc = subprocess.run(
        [argv[0], "-X", "importtime", *argv[1:]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    return any(line.rstrip().endswith("| torch") for line in proc.stderr.splitlines())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--sandbox", default="process")
    ap.add_argument("--markdown")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="instant-errors-") as tmp:
        todo = cases(Path(tmp), args.sandbox)
        times: dict[str, list[float]] = {name: [] for name, _, _ in todo}
        codes: dict[str, set] = {name: set() for name, _, _ in todo}
        for _ in range(args.runs):
            for name, argv, _ in todo:
                wall, rc = run_once(argv)
                times[name].append(wall)
                codes[name].add(rc)
        torch_seen = {name: imports_torch(argv) for name, argv, _ in todo}
    try:
        load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        load = "?"
    lines = [
        f"{args.runs} runs each, interleaved; {os.cpu_count()} cores; load average {load} at the end",
        "",
        "| case | exit | torch imported | median s | min s | max s |",
        "|---|---|---|---|---|---|",
    ]
    bad = 0
    for name, _, want in todo:
        t = times[name]
        rc = ",".join(str(c) for c in sorted(codes[name]))
        ok = codes[name] == {want}
        if not name.startswith("yardstick"):
            ok = ok and not torch_seen[name] and statistics.median(t) <= 1.5
        bad += not ok
        lines.append(
            f"| {name} | {rc}{'' if codes[name] == {want} else f' (want {want})'} | "
            f"{'yes' if torch_seen[name] else 'no'} | {statistics.median(t):.2f} | {min(t):.2f} | "
            f"{max(t):.2f} |"
        )
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
