# The entry point takes one argument; the judge passes two.
# expect: must accept 2 positional arguments
def add(xy):
    return xy
