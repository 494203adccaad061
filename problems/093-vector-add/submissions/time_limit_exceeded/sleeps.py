# Sleeps forever (an idle hang, not a busy one: only a wall-clock limit catches it).
# expect: no answer within
import time


def add(x, y):
    time.sleep(10 ** 6)
