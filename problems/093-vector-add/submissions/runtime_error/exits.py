# Ends the worker process in the middle of a case.
# expect: exited with status 7
import os


def add(x, y):
    os._exit(7)
