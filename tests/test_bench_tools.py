"""The measuring scripts' own arithmetic (tests/bench): a figure in RESULTS.md is only as good as this."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_steady_rate_counts_only_the_window_in_which_every_slot_was_busy():
    gt = _load("grade_throughput")
    # 9 files on 2 slots, each job 10 s, the second slot's first one 15 s: one ends every 5 s while the queue
    # lasts (the 7th completion, at 40 s, starts the last file), then the tail: the last job alone, to 50 s.
    finishes = [10.0, 15.0, 20.0, 25.0, 30.0, 35.0, 40.0, 45.0, 50.0]
    st = gt.steady_rate(finishes, 2)
    assert st == {"completions": 6, "window_s": 30.0, "per_hour": 720}  # two slots of 10-s jobs: 720 an hour
    whole = len(finishes) / 50.0 * 3600  # the whole roster's rate, ramp and tail in it: 648 (one job in the tail)
    assert abs(whole - 648) < 1
    assert gt.steady_rate(finishes[:4], 2) is None  # too short for a window
    assert gt.steady_rate(finishes, 0) is None  # slots unknown
