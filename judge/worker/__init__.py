"""The untrusted side of the judge: the only code that imports a submission.

This package must import nothing from ``judge`` except ``judge.protocol`` and
itself: sandboxes mount just these files next to the submission.
"""
