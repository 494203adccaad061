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


def test_roster_timelines_line_jobs_up_on_the_hosts_clock_to_say_what_a_speed_run_waited_for(tmp_path):
    # Each job's timeline counts from its own process's start: job B's process started 100 s before job A's.
    # On the host's clock A's speed run waits from 110 to 113 s (A's own clock: 10 to 13); B's case holds the
    # GPU from 111 to 112.9 s (B's own clock: the same), its replay from 10.5 to 11 s. Read on the files' own
    # clocks instead, the replay would seem to end inside A's wait and the case to come long after it.
    import json

    rt = _load("roster_timelines")

    def x(name, t0, t1, tid=1):
        return {
            "name": name,
            "ph": "X",
            "ts": int(t0 * 1e6),
            "dur": int((t1 - t0) * 1e6),
            "pid": 1,
            "tid": tid,
            "args": {},
        }

    a = [x("speed run: wait for the GPU lock", 10, 13), x("speed run: timed rounds", 13, 15)]
    b = [
        x("case (large)", 110.5, 113.5),
        x("GPU held shared", 111, 112.9),
        x("replay (large)", 10.2, 11.2, tid=2),
        x("GPU held shared", 10.5, 11.0, tid=2),
    ]
    for name, events, origin in (("timeline-1.json", a, 100.0), ("timeline-2.json", b, 0.0)):
        (tmp_path / name).write_text(json.dumps({"traceEvents": events, "otherData": {"monotonic_origin_s": origin}}))
    jobs = [(str(p), *rt.load_with_origin(str(p))) for p in sorted(tmp_path.glob("timeline-*.json"))]
    waits = rt.what_the_waits_waited_for(jobs)
    assert [(round(w, 2), label, round(held, 2)) for w, label, held in waits] == [(3.0, "case", 1.9)]
    # A third job's speed run held the GPU alone from 111.5 to 112.95 s (its own clock: 1.5 to 2.95), after
    # B's case had begun: A's wait ended behind that speed run, not behind the case.
    c = [
        x("speed run: wait for the GPU lock", 0.5, 1.5),
        x("speed run: timed rounds", 1.5, 2.5),
        x("speed run: trim", 2.5, 2.95),
    ]
    (tmp_path / "timeline-3.json").write_text(
        json.dumps({"traceEvents": c, "otherData": {"monotonic_origin_s": 110.0}})
    )
    jobs = [(str(p), *rt.load_with_origin(str(p))) for p in sorted(tmp_path.glob("timeline-*.json"))]
    found = {(round(w, 2), label) for w, label, _ in rt.what_the_waits_waited_for(jobs)}
    assert (3.0, rt.SPEED_RUN) in found
