"""Code that runs on both sides of the trust boundary.

The trusted judge and the untrusted worker (``judge.untrusted``) both import
this package, and a sandbox mounts it next to the worker, so it must import
nothing else of ``judge`` and depend on the standard library and torch only:

* ``wire`` - the framing and tensor encoding of every message that crosses;
* ``bench_inputs`` - the inputs of timed calls, generated from a seed (the
  worker makes them for every timed call; the judge makes the same ones again
  to check a timed call's outputs).
"""
