#!/usr/bin/env python3
"""How long stopping a session's workers takes: start N workers of 93's reference, then time Workers.stop().

    PYTHONPATH=. python tests/bench/worker_stop.py [--device cpu|cuda] [--counts 1 2 4]

A worker asked to exit used to return through the interpreter's shutdown and outlast close()'s two seconds
of grace, then be killed: two seconds per worker, one after the other (9edee07:tests/bench/RESULTS.md, 2026-12-02).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main() -> int:
    from judge import intake
    from judge.exchange import Workers
    from judge.options import Options, limits_for
    from judge.problems import find_problem
    from judge.sandbox import Job
    from judge.sandbox.process import ProcessBackend

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--counts", type=int, nargs="*", default=[1, 2, 4])
    args = ap.parse_args()
    p = find_problem("93")
    interpret = args.device == "cpu"
    opts = Options(device=args.device, interpret=interpret, sandbox="process")
    for n in args.counts:
        job = Job(
            submission=p.reference_path,
            scratch=Path(tempfile.mkdtemp()),
            device=args.device,
            interpret=interpret,
            limits=limits_for(p, opts),
            gpu=0 if args.device == "cuda" else None,
            cache=intake.kernel_cache(p.reference_path, args.device, interpret),
        )
        workers = Workers(p, job, ProcessBackend(), threads=1, count=n)
        if workers.start() is not None:
            print(f"{n} workers: the first did not start", file=sys.stderr)
            return 1
        for ex in workers.all:
            if not ex.alive:
                ex.start()
        t0 = time.monotonic()
        workers.stop()
        print(f"{n} workers: stop took {time.monotonic() - t0:.3f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
