#!/usr/bin/env python3
"""The accepted corpus through a speed run whose warm-up is checked ahead: no false findings.

Every accepted file of 93-98 gets a speed run as a session gives it (the warm-up ahead, prewarm, then run())
with the checks ahead on (as on a GPU), in interpreter mode on the problem's interpret_shapes, one round: a
warm-up call of every shape checked against the golden model and replayed
(judge.timing.verify.Verifier.check_ahead), then the timed call's check and replay as always. Prints one
line per file (the warm-up's replays, all the replays, seconds) and the count of files that failed, which must
be 0.

    python tests/bench/ahead_sweep.py
"""

import glob
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from pathlib import Path

from judge.problems import find_problem
from judge.sandbox import Limits
from judge.sandbox.process import ProcessBackend
from judge.timing import stats, verify
from judge.timing.findings import BenchFailed
from judge.timing.speedrun import BenchConfig, SpeedRun

verify.checks_ahead = lambda cuda: True  # (the interpreter's default is none: nothing there to compile)
limits = Limits(
    case_seconds=120, run_seconds=600, memory_mb=4096, output_bytes=1 << 20, processes=256, startup_seconds=120
)
bad = 0
for pid in ("93", "94", "95", "96", "97", "98"):
    p = find_problem(pid)
    for f in sorted(glob.glob(str(p.directory / "submissions/accepted/*.py"))):
        cfg = BenchConfig(
            shapes=[dict(x) for x in p.spec["bench"]["interpret_shapes"]],
            stop=stats.StopRule(ci_target=0.01, min_rounds=1, max_rounds=1, budget_seconds=60),
            torch_baseline=False,
        )
        t0 = time.monotonic()
        run = SpeedRun(
            p,
            Path(f),
            device="cpu",
            interpret=True,
            gpu=None,
            backend=ProcessBackend(),
            limits=limits,
            scratch=Path(tempfile.mkdtemp()),
            config=cfg,
        )
        run.prewarm()
        try:
            sp = run.run()
            ph = sp["phases"]
            print(
                pid,
                Path(f).name,
                "ok",
                ph.get("ahead_replays"),
                ph.get("replays"),
                round(time.monotonic() - t0, 1),
                flush=True,
            )
        except BenchFailed as e:
            bad += 1
            print(pid, Path(f).name, "FAILED", e.verdict, e.message[:200], flush=True)
print("bad", bad)
sys.exit(1 if bad else 0)
