# Crashes the worker process with a segmentation fault (faulthandler's test
# hook raises a real SIGSEGV, as a bad native access would).
# expect: SIGSEGV
import faulthandler


def add(x, y):
    faulthandler._sigsegv()
    return x
