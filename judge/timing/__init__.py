"""Speed: the timing protocol (judge side), its statistics, ceilings, lock and score.

The worker only runs and times calls (``judge/untrusted/bench.py``); everything
that decides something - medians, confidence intervals, the stopping rule,
the physical floor, the cross-check of the worker's clocks, the points - is
computed here, in the trusted judge process.
"""
