"""A worker weighs on the CPU what the process that started it weighs.

Each worker runs in a session of its own, and where the kernel groups tasks by session (autogroups, on in most
distributions) a session competes as one task at its group's nice, whatever nice its processes carry. So a
worker started by a process at nice 10 (a job of the grading service) would weigh as much as the service's
own threads, and a burst of jobs would starve the service's replies. The worker gives its session the nice it
inherited. In a cgroup of the cpu controller autogroups do not apply: judge.sandbox.cgroups weighs the cgroup
by the same table.
"""

from __future__ import annotations

import os
import time

# The kernel's weight of a task at each nice from -20 to 19 (sched_prio_to_weight): nice 0 weighs 1024, and each
# step is about 1.25 times the next.
WEIGHTS = (
    88761,
    71755,
    56483,
    46273,
    36291,
    29154,
    23254,
    18705,
    14949,
    11916,
    9548,
    7620,
    6100,
    4904,
    3906,
    3121,
    2501,
    1991,
    1586,
    1277,
    1024,
    820,
    655,
    526,
    423,
    335,
    272,
    215,
    172,
    137,
    110,
    87,
    70,
    56,
    45,
    36,
    29,
    23,
    18,
    15,
)


def own() -> int:
    """This process's nice."""
    return os.getpriority(os.PRIO_PROCESS, 0)


def weight(nice: int) -> int:
    """The scheduler's weight of one task at ``nice`` (1024 at 0)."""
    return WEIGHTS[max(-20, min(19, int(nice))) + 20]


def set_session(nice: int, tries: int) -> bool:
    """Set this session's autogroup nice; whether it was set. Writes to an autogroup are rate-limited (one in
    100 ms on the whole machine, unless privileged): a write refused for it (EAGAIN) is tried again."""
    for attempt in range(tries):
        try:
            with open("/proc/self/autogroup", "w") as f:
                f.write(str(nice))
            return True
        except BlockingIOError:  # the kernel's rate limit: another write in the last 100 ms
            if attempt + 1 < tries:
                time.sleep(0.11)
        except OSError:  # no autogroups here (or not allowed): nothing to set
            return False
    return False


def inherit(tries: int = 5) -> bool:
    """Give this process's session the nice the process inherited (nothing to do at 0 or below: a session
    starts at 0, and only a privileged process may go lower)."""
    nice = own()
    return nice <= 0 or set_session(nice, tries)
