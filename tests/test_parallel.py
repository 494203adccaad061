"""One submission's cases spread over several workers give the verdicts one worker gives (issue 13).

With a fixed seed, the same cases are drawn, in the same order, and the
first that fails is shrunk the same way: the other workers only run the
group's cases ahead. Compared here on files that end each way, including a
hang (a worker death freezes the group), a cache by address (the refill), and
a cheat only the replay catches.
"""

from pathlib import Path

import pytest

from judge.options import Options
from judge.problems import find_problem
from judge.session import Session

ROOT = Path(__file__).resolve().parents[1]
S93 = ROOT / "problems" / "093-vector-add" / "submissions"
FILES = [
    ("93", ROOT / "reference" / "093-vector-add.py"),
    ("93", S93 / "wrong_answer" / "tail_dropped.py"),
    ("93", S93 / "wrong_answer" / "ignores_strides.py"),
    ("93", S93 / "rejected" / "exploit_cache_by_address.py"),
    ("93", S93 / "rejected" / "exploit2_noop_proc_mem_tensor.py"),
    ("93", S93 / "runtime_error" / "raises.py"),
    ("93", S93 / "time_limit_exceeded" / "python_spin.py"),
    ("94", ROOT / "problems" / "094-softmax" / "submissions" / "wrong_answer" / "hint_masked_tail_other.py"),
]


def _judge(pid, path, workers):
    limits = {"case_seconds_interpret": 10, "startup_seconds": 30}
    report = Session(find_problem(pid), path, Options(sandbox="process", seed=4, workers=workers,
                                                       limits=limits)).run()
    return report, [(g.name, g.verdict.value, g.case, g.passed, g.skipped) for g in report.groups]


@pytest.mark.corpus
@pytest.mark.parametrize("pid,path", [f if i < 3 else pytest.param(*f, marks=pytest.mark.full)
                                      for i, f in enumerate(FILES)], ids=[f[1].stem for f in FILES])
def test_two_workers_give_the_verdicts_of_one(pid, path):
    if not path.exists():
        pytest.skip(f"{path.name} is not in the corpus")
    one, groups_one = _judge(pid, path, 1)
    two, groups_two = _judge(pid, path, 2)
    assert two.timing.get("workers") == 2
    assert one.verdict == two.verdict
    # The same groups fail on the same shrunk cases (a replay's message quotes its own fresh values).
    assert groups_one == groups_two
