import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# The suite judges in Triton's interpreter on the CPU unless told otherwise
# (tests/gpu/ runs the same corpus compiled on a GPU).
os.environ.setdefault("JUDGE_TEST_DEVICE", "cpu")


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT
