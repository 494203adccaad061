"""A judge for Triton GPU-kernel exercises.

Kept import-light on purpose: the worker package lives inside it and is loaded
in sandboxes that have only torch and triton.
"""

__version__ = "0.1.0"
