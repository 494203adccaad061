"""An exception the submission raises is reported as data, whatever it does when the worker reads it."""

from pathlib import Path

import pytest

from judge.options import Options
from judge.problems import find_problem
from judge.session import Session

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.corpus
def test_an_exception_whose_message_cannot_be_printed_is_rte_with_a_neutral_message():
    # Its __str__ raises: the worker's error handling died on it (RTE "exited with status 1"), and the judge's own
    # traceback was shown as printed by the submission (issue 40).
    path = (
        ROOT / "problems" / "093-vector-add" / "submissions" / "runtime_error" / "exception_that_cannot_be_printed.py"
    )
    report = Session(
        find_problem("93"),
        path,
        Options(sandbox="process", seed=1, device="cpu", interpret=True, workers=1, group="small-ragged"),
    ).run()
    assert report.verdict.value == "RTE", report.message
    assert "an exception of type Unprintable whose message could not be shown" in report.message, report.message
    assert "exited with status" not in report.message
    assert "Traceback" not in report.output and "judge/untrusted" not in report.output, report.output
