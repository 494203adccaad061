# Fails while the module is imported, before any test runs.
# expect: error while importing
import triton

CONFIG = {"block": 1024}
BLOCK = CONFIG["BLOCK"]


def add(x, y):
    return x
