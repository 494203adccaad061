#!/usr/bin/env python3
"""What the worker's hold on a kernel's globals and Triton's language (judge.untrusted.constants) costs a launch.

Loads a reference solution as the worker does (its module, then ``constants.watch``), and times
``constants.check`` in a loop: a launch runs it three times (before it, after a callable grid, after it).

    python tests/bench/constants_check.py [REFERENCE ...] [--calls N]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "references", nargs="*", default=["reference/098-flash-attention-backward.py", "reference/094-softmax.py"]
    )
    ap.add_argument("--calls", type=int, default=20000)
    args = ap.parse_args()
    from judge.untrusted import constants

    constants.take_language()  # as the worker does before the import
    for ref in args.references:
        path = ROOT / ref
        spec = importlib.util.spec_from_file_location("submission", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        constants.watch(str(path), path.read_text(), vars(module))
        fn = next(iter(constants._kernels.values())).fn
        t = time.perf_counter()
        for _ in range(args.calls):
            constants.check(fn, "k", "in the loop")
        full = (time.perf_counter() - t) / args.calls
        t = time.perf_counter()
        for _ in range(args.calls):
            constants.check(fn, "k", "in the loop", language=False)
        short = (time.perf_counter() - t) / args.calls
        found = constants.take()
        # A launch in the interpreter: two full checks (before it, after a callable grid) and one without the
        # language (after it). On a GPU (judge.untrusted.launches._wrap_compile) only a launch that compiles pays,
        # two full checks (before and after the compile); "from the cache" is what every launch paid before
        # 2026-12-04 (three without the language).
        print(
            f"{ref}: {len(constants._expected)} constants, {len(constants._kernels)} kernels, "
            f"{len(constants._language)} namespaces of Triton's language: {full * 1e6:.1f} us a check, "
            f"{short * 1e6:.1f} us without the language; a launch: {(2 * full + short) * 1e6:.1f} us in the "
            f"interpreter, {2 * full * 1e6:.1f} us a compile on a GPU (was {3 * short * 1e6:.1f} us a launch from the "
            f"cache); differences found: {len(found)}"
        )


if __name__ == "__main__":
    main()
