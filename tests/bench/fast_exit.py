"""What ending `submit` without the interpreter's teardown saves (judge.cli_common.leave): `submit ID FILE
--json` with JUDGE_FAST_EXIT=0 and =1 in turn, the order swapped every round; wall time of the whole command
and the report's own elapsed_seconds (which neither side's exit touches).

    python tests/bench/fast_exit.py 94 reference/094-softmax.py --rounds 4 [--device cuda --sandbox bwrap]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("problem")
    ap.add_argument("file")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--sandbox", default="process")
    a = ap.parse_args()
    got = {"0": [], "1": []}
    for r in range(a.rounds):
        for v in ("0", "1") if r % 2 == 0 else ("1", "0"):
            t0 = time.monotonic()
            p = subprocess.run([sys.executable, "-m", "judge", "submit", a.problem, a.file, "--json", "--seed", "1",
                                "--sandbox", a.sandbox, "--device", a.device], cwd=ROOT, capture_output=True,
                               text=True, env={**os.environ, "JUDGE_FAST_EXIT": v})
            wall = time.monotonic() - t0
            report = json.loads(p.stdout)
            got[v].append((wall, report["elapsed_seconds"], p.returncode))
            print(f"JUDGE_FAST_EXIT={v} rc {p.returncode} {report['verdict']} wall {wall:.2f} s elapsed "
                  f"{report['elapsed_seconds']:.2f} s", flush=True)
    print("| JUDGE_FAST_EXIT | runs | wall median s | wall - elapsed median s |\n|---|---|---|---|")
    for v, rows in got.items():
        print(f"| {v} | {len(rows)} | {statistics.median(w for w, _, _ in rows):.2f} | "
              f"{statistics.median(w - e for w, e, _ in rows):.2f} |")


if __name__ == "__main__":
    main()
