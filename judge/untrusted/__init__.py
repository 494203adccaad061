"""The untrusted side of the judge: the only code that imports a submission.

This package imports nothing of ``judge`` but ``judge.shared`` and itself
(tests/test_boundary.py checks it): a sandbox mounts just these files next to
the submission. Its trusted counterpart is ``judge.channel`` (one worker's
pipes and limits, seen from the judge).
"""
