"""The one place that decides how a file is judged: by the problem's kind.

``submit``/``test`` (judge.cli), ``grade``, Gradescope and PrairieLearn
(judge.grading.job), the self-test and ``verify`` (judge.selftest) all call
:func:`judge_file`: a kernel problem runs a Session (a worker, the golden
model, the speed run); an answers problem reads the file as data
(judge.answers: nothing runs).

A kernel file whose judging failed because its GPU ran out of memory with other work (an IE the judge's own
view confirmed: judge.shared.oom, judge.rules.gpu_full) is judged again here, a bounded number of times, once
another judge on the GPU gave memory back: the same for a student's ``submit`` as for a roster's job.
"""

from __future__ import annotations

from pathlib import Path

from judge.verdicts import Report, Verdict

# How many times a judging that failed because its GPU was full (a capacity IE) is done again, and how long each
# new try waits at most for another judge on the GPU to give memory back first.
CAPACITY_RETRIES = 2
CAPACITY_WAIT_SECONDS = 60.0
CAPACITY_WORDS = "the GPU was full with other work"  # judge.shared.oom.device_full's, in every phase's IE


def capacity_failure(verdict, message: str) -> bool:
    """Whether a report's verdict and message are an IE because the GPU ran out of memory: the judge's words for
    a worker's or a replay's error on a full device, or CUDA's own "out of memory" (a trusted timed worker's,
    the judge's own). A refusal of a judging too big for the device says neither: it is not tried again."""
    value = getattr(verdict, "value", verdict)
    text = str(message or "")
    return value == Verdict.IE and (CAPACITY_WORDS in text or "out of memory" in text.lower())


def judge_file(problem, path: Path, options) -> Report:
    """PROBLEM's report for the file at PATH under OPTIONS (judge.options.Options)."""
    if problem.kind == "answers":
        from judge.answers import judge_answers

        return judge_answers(problem, path, options)
    from judge.session import Session

    return judged_again_on_capacity(lambda: Session(problem, path, options).run(), lambda: _wait_for_room(options))


def judged_again_on_capacity(run, wait, retries: int = CAPACITY_RETRIES) -> Report:
    """``run()``'s report, run again (at most ``retries`` times, each after ``wait()``) while it is a capacity
    failure, or while it raised CUDA's out-of-memory error in the judge's own process; the report says so in a
    note, as an online judge's rejudge of an internal error does."""
    from judge.shared.oom import out_of_memory

    tries = 0
    while True:
        try:
            report = run()
        except Exception as exc:  # noqa: BLE001 - only the GPU's running out of memory is tried again
            if not out_of_memory(exc) or tries >= retries:
                raise
            report = None
        if (report is not None and not capacity_failure(report.verdict, report.message)) or tries >= retries:
            break
        tries += 1
        wait()
    if tries:
        went = "every time" if capacity_failure(report.verdict, report.message) else "then it went through"
        report.notes.append(f"judged {tries + 1} times: the GPU ran out of memory with other work ({went})")
    return report


def _wait_for_room(options) -> None:
    """Before a capacity failure's next try: until another judge on the GPU gives memory back
    (judge.gpu_admission), or CAPACITY_WAIT_SECONDS."""
    import time

    if options.device != "cuda" or options.interpret:
        return
    if options.progress is not None:
        options.progress.stage("the GPU ran out of memory with other work: judging again when some is given back")
    from judge.gpu_admission import Admission

    try:
        Admission(options.gpu or 0).wait_for_change(CAPACITY_WAIT_SECONDS)
    except OSError:
        time.sleep(min(CAPACITY_WAIT_SECONDS, 10.0))
