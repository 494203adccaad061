"""A judge for Triton GPU-kernel exercises.

Kept import-light on purpose: the worker package lives inside it and is loaded
in sandboxes that have only torch and triton.
"""

import os

__version__ = "0.1.0"

# Hypothesis loads every plugin the machine has installed (its "hypothesis" entry points) when it is first
# imported: the judge's property tests must not depend on them, and one is costly (trio's, there wherever Selenium
# is, registers its random, which makes `import judge.groups` several times slower). Its presence, whatever its
# value, turns them off; set before any judge module imports Hypothesis.
os.environ.setdefault("HYPOTHESIS_NO_PLUGINS", "1")
