# café au lait
def add(x, y):
    return x
