import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# The suite judges in Triton's interpreter on the CPU unless told otherwise
# (tests/gpu/ runs the same corpus compiled on a GPU).
os.environ.setdefault("JUDGE_TEST_DEVICE", "cpu")
# One worker per submission unless a test asks for more (tests/test_parallel.py does): pytest -n already
# keeps every core busy, and each extra worker is one more import of torch and Triton per judged file (with
# two per file the corpus lane took about three times as long on CI's 2 cores).
os.environ.setdefault("JUDGE_WORKERS", "1")


@pytest.fixture(autouse=True)
def _fresh_settings():
    """judge.settings reads the environment once per process: each test starts and ends with it unread, so a
    JUDGE_* variable a test sets (monkeypatch.setenv) before the judge reads it is what the judge sees. A test
    that changes one after the judge has read them calls ``settings.cache_clear()`` itself."""
    from judge.settings import settings

    settings.cache_clear()
    yield
    settings.cache_clear()


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


def pytest_collection_modifyitems(config, items):
    """The slow tests (those that judge files end to end, marked ``corpus``) first, the quick ones after: with
    ``pytest -n`` each worker then ends on quick tests, not on a long one the other worker waits out."""
    items.sort(key=lambda item: item.get_closest_marker("corpus") is None)
