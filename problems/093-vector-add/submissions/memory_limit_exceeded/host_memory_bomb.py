# Allocates host memory until something gives.
# expect: memory
def add(x, y):
    hoard = []
    while True:
        hoard.append(bytearray(256 << 20))
