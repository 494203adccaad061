"""Running a test group: its edge examples, then Hypothesis's drawn cases, shrinking the first failure.

``run_group`` knows nothing of workers: it calls ``run_case(params)`` for each
case and stops at the first one whose Outcome did not pass; Hypothesis then
shrinks that case to a minimal one (each try is another ``run_case``).
"""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, Verbosity, example, given, seed, settings
from hypothesis.errors import HypothesisException

from judge.cases import derive_seed, params_strategy


class CaseFailed(Exception):
    def __init__(self, params: dict, outcome):
        super().__init__(outcome.message)
        self.params = params
        self.outcome = outcome


def run_cases(cases: list[dict], run_case) -> CaseFailed | None:
    """Exactly these cases, in order (``--case``): the first failure, or None."""
    for params in cases:
        outcome = run_case(params)
        if not outcome.passed:
            return CaseFailed(params, outcome)
    return None


def draw_cases(domain: dict, examples: list[dict], n: int, salt: str, *, interpret: bool) -> list[dict]:
    """The cases run_group will run, in its order, as long as every one passes: the explicit examples, then
    the drawn ones (the same seed draws the same cases: Hypothesis's choices depend on the outcomes only
    through a failure). The session runs them ahead, in parallel, and run_group then finds their outcomes."""
    seen: list[dict] = []

    class _Pass:
        passed = True
        message = ""

    def record(params):
        seen.append(dict(params))
        return _Pass()

    run_group(domain, examples, n, salt, record, interpret=interpret, shrink_seconds=0.0)
    return seen


def run_group(
    domain: dict, examples: list[dict], n: int, salt: str, run_case, *, interpret: bool, shrink_seconds: float
) -> CaseFailed | None:
    """The explicit examples, then ``n`` drawn cases (seeded by ``salt``): the shrunk first failure, or None."""
    import hypothesis.internal.conjecture.engine as engine

    engine.MAX_SHRINKING_SECONDS = shrink_seconds
    first: list[CaseFailed] = []

    def prop(params):
        outcome = run_case(params)
        if not outcome.passed:
            failure = CaseFailed(params, outcome)
            if not first:
                first.append(failure)
            raise failure

    test = given(params=params_strategy(domain, interpret))(prop)
    for ex in reversed(examples):
        test = example(params=ex)(test)
    test = settings(
        max_examples=max(n, 1),
        deadline=None,
        database=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
        verbosity=Verbosity.quiet,
        phases=[Phase.explicit, Phase.generate, Phase.shrink] if n > 0 else [Phase.explicit],
        print_blob=False,
    )(test)
    test = seed(derive_seed(salt))(test)
    try:
        test()
    except CaseFailed as exc:
        return exc
    except (HypothesisException, BaseExceptionGroup) as exc:
        # A flaky submission (passes on replay) still failed once: report that.
        inner = _find_case_failed(exc)
        if inner is not None:
            return inner
        if first:
            return first[0]
        # The judge's own error on some try (not a failing case), perhaps gone on the next: raise that error,
        # not Hypothesis's "unreliable results" around it, which named neither what failed nor where.
        inner = _first_error(exc)
        if inner is not None:
            raise inner from exc
        raise
    return None


def _first_error(exc):
    """The first exception inside Hypothesis's ``exc`` (its group, its cause) that is not Hypothesis's own."""
    for inner in list(getattr(exc, "exceptions", ()) or ()) + [exc.__cause__ or exc.__context__]:
        if inner is None or inner is exc:
            continue
        if not isinstance(inner, (HypothesisException, BaseExceptionGroup)):
            return inner
        found = _first_error(inner)
        if found is not None:
            return found
    return None


def _find_case_failed(exc):
    if isinstance(exc, CaseFailed):
        return exc
    for inner in getattr(exc, "exceptions", ()) or ():
        found = _find_case_failed(inner)
        if found is not None:
            return found
    cause = exc.__cause__ or exc.__context__
    if cause is not None and cause is not exc:
        return _find_case_failed(cause)
    return None
