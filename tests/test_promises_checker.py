"""The output check's promises (judge.checker), on small tensors whose allowances are worked out by hand.

The allowed error of an element is  factor * (the naive model's error, pooled over the scope)
+ ulps * eps(dtype) * |gold| + atol: a value at the allowance passes, one past it fails. NaN and infinity must sit
exactly where the answer (in the output dtype) has them, with the same sign.
"""

import pytest
import torch

from judge import checker

F64 = torch.float64
EPS32 = torch.finfo(torch.float32).eps


def _t(*values):
    return torch.tensor(values, dtype=F64)


def test_the_allowance_is_factor_times_the_naive_error_plus_ulps_plus_atol():
    gold = _t(1.0, -2.0, 0.0)
    naive = gold + _t(0.5, 0.0, 0.25)
    allowed = checker.tolerance(gold, naive, torch.float32, "element", {"factor": 3, "ulps": 4, "atol": 1e-3})
    expected = _t(3 * 0.5 + 4 * EPS32 * 1.0 + 1e-3, 3 * 0.0 + 4 * EPS32 * 2.0 + 1e-3, 3 * 0.25 + 0.0 + 1e-3)
    assert torch.allclose(allowed, expected, rtol=1e-12, atol=0)


def test_the_defaults_are_twice_the_naive_error_and_two_ulps():
    gold = _t(4.0)
    naive = gold + 0.125
    finfo = torch.finfo(torch.float16)
    allowed = checker.tolerance(gold, naive, torch.float16, "element", {})
    assert allowed.item() == pytest.approx(2 * 0.125 + 2 * finfo.eps * 4.0 + 2 * finfo.eps * finfo.tiny, rel=1e-12)


@pytest.mark.parametrize(
    "scope,expected",
    [
        ("element", [[0.1, 0.0, 0.0], [0.0, 0.0, 0.3]]),
        ("row", [[0.1, 0.1, 0.1], [0.3, 0.3, 0.3]]),
        ("tensor", [[0.3, 0.3, 0.3], [0.3, 0.3, 0.3]]),
    ],
)
def test_the_naive_error_is_pooled_over_the_scope(scope, expected):
    gold = torch.zeros(2, 3, dtype=F64)
    naive = torch.tensor([[0.1, 0.0, 0.0], [0.0, 0.0, -0.3]], dtype=F64)
    allowed = checker.tolerance(gold, naive, torch.float32, scope, {"factor": 1, "ulps": 0, "atol": 0})
    assert torch.allclose(allowed, torch.tensor(expected, dtype=F64))


def test_an_unknown_scope_is_refused():
    with pytest.raises(ValueError, match="unknown scope"):
        checker.pooled(torch.zeros(2, 2, dtype=F64), "column")


def test_a_scalar_output_is_its_own_pool():
    err = torch.tensor(0.5, dtype=F64)
    assert checker.pooled(err, "row") is err


@pytest.mark.parametrize("scope", ["element", "row", "tensor"])
def test_a_value_at_the_allowance_passes_and_one_past_it_fails(scope):
    gold = _t(1.0, 2.0, 3.0, 4.0).reshape(2, 2)
    naive = gold + _t(0.0, 0.25, 0.0, 0.0).reshape(2, 2)
    check = {"factor": 2, "ulps": 0, "atol": 0}
    allowed = checker.tolerance(gold, naive, torch.float64, scope, check)
    at = gold + allowed
    assert checker.compare("out", at, gold, naive, torch.float64, scope, check) is None
    past = at.clone()
    past[0, 1] = past[0, 1] * (1 + 1e-9) if allowed[0, 1] > 0 else past[0, 1] + 1e-9
    wrong = checker.compare("out", past, gold, naive, torch.float64, scope, check)
    assert wrong is not None and wrong.bad == 1 and wrong.total == 4
    assert wrong.samples[0][0] == (0, 1)


def test_a_naive_model_that_is_exact_still_leaves_the_ulps_floor():
    gold = _t(1000.0)
    check = {"factor": 2, "ulps": 2, "atol": 0}
    floor = 2 * EPS32 * 1000.0
    assert checker.compare("o", gold + 0.9 * floor, gold, gold, torch.float32, "element", check) is None
    assert checker.compare("o", gold + 1.1 * floor, gold, gold, torch.float32, "element", check) is not None


def test_a_naive_model_not_finite_where_the_answer_is_representable_is_the_problems_bug():
    gold = _t(1.0, 2.0)
    with pytest.raises(ValueError, match="naive model is not finite"):
        checker.tolerance(gold, _t(1.0, float("nan")), torch.float32, "element", {})
    # Where the answer is not finite, the naive error does not count.
    assert checker.tolerance(_t(float("inf")), _t(float("nan")), torch.float32, "element", {}).isfinite().all()


@pytest.mark.parametrize(
    "got,expected_words",
    [
        ([float("nan"), 2.0, float("inf")], "1 NaN where finite values were expected"),
        ([1.0, float("inf"), float("inf")], "1 inf where finite values were expected"),
        ([1.0, 2.0, 5.0], "1 finite values where NaN/inf was expected"),
        ([1.0, 2.0, float("-inf")], "1 NaN/inf of the wrong kind"),
        ([1.0, 2.0, float("nan")], "1 NaN/inf of the wrong kind"),
        ([1.5, 2.0, float("inf")], "1 values outside the tolerance (largest error 0.5)"),
    ],
)
def test_each_kind_of_wrong_element_is_named_and_counted(got, expected_words):
    gold = _t(1.0, 2.0, float("inf"))
    m = checker.compare(
        "out", torch.tensor(got, dtype=torch.float32), gold, gold, torch.float32, "element", {"ulps": 0, "atol": 0}
    )
    assert m is not None and m.bad == 1 and m.total == 3
    assert m.message.startswith("out: 1 of 3 elements wrong: ") and expected_words in m.message, m.message


def test_nan_and_inf_in_their_places_pass():
    gold = _t(float("nan"), float("inf"), float("-inf"), 1.0)
    got = torch.tensor([float("nan"), float("inf"), float("-inf"), 1.0], dtype=torch.float32)
    assert checker.compare("o", got, gold, gold, torch.float32, "element", {}) is None


def test_a_sum_that_overflows_the_output_dtype_must_be_inf_there():
    gold = _t(70000.0)  # past float16's largest finite value (65504)
    assert (
        checker.compare(
            "o", torch.tensor([float("inf")], dtype=torch.float16), gold, gold, torch.float16, "element", {}
        )
        is None
    )
    m = checker.compare("o", torch.tensor([65504.0], dtype=torch.float16), gold, gold, torch.float16, "element", {})
    assert m is not None and "finite values where NaN/inf was expected" in m.message


def test_the_worst_elements_are_shown_first_and_at_most_five():
    gold = torch.zeros(8, dtype=F64)
    errors = _t(0.1, 0.0, 0.7, 0.3, 0.0, 0.5, 0.2, 0.6)
    got = (gold + errors).to(torch.float32)
    got[1] = float("nan")
    m = checker.compare("o", got, gold, gold, torch.float32, "element", {"ulps": 0, "atol": 1e-6})
    assert m.bad == 7
    assert [s[0] for s in m.samples] == [(1,), (2,), (7,), (5,), (3,)]  # NaN first, then by how far past
    index, value, expected, allowed = m.samples[1]
    assert value == pytest.approx(0.7) and expected == 0.0 and allowed == pytest.approx(1e-6)


def test_the_pattern_names_where_the_wrong_elements_are():
    bad = torch.zeros(4, 10, dtype=torch.bool)
    bad[1, 2:5] = True
    bad[3, 9] = True
    assert checker.describe_pattern(bad) == "rows 1, 3 of 4; cols 2-4, 9 of 10"
    assert checker.describe_pattern(torch.ones(3, dtype=torch.bool)) == "all elements (0-2)"
    assert checker.describe_pattern(torch.ones(1, 2, dtype=torch.bool)) == "rows 0; all cols (0-1)"
    assert checker.describe_pattern(torch.tensor(True)) == "the scalar"
    assert checker.describe_pattern(bad, {0: "heads"}) == "heads 1, 3 of 4; dim 1 2-4, 9 of 10"
    assert checker.describe_pattern(torch.zeros(2, 2, 2, dtype=torch.bool).logical_not()).startswith("all dim 0")


def test_runs_of_indices_are_shortened_past_six():
    assert checker._ranges([0, 1, 2, 5, 7, 8]) == "0-2, 5, 7-8"
    assert checker._ranges([]) == ""
    assert checker._ranges(list(range(0, 20, 2))) == "0, 2, 4, 6, 8, 10, ... (10 runs)"


def test_a_right_answer_in_another_dtype_is_compared_as_its_values():
    gold = _t(0.5, 0.25)
    got = torch.tensor([0.5, 0.25], dtype=torch.bfloat16)
    assert checker.compare("o", got, gold, gold, torch.bfloat16, "element", {}) is None
    assert (
        checker.compare(
            "o", torch.tensor([0.5, 0.5], dtype=torch.bfloat16), gold, gold, torch.bfloat16, "element", {}
        ).bad
        == 1
    )


class _OnTheGpu:
    """A tensor as the comparison sees one on a GPU: its device says cuda, and .cpu() brings it back."""

    def __init__(self, t):
        self.t = t
        self.device = torch.device("cuda", 0)

    def cpu(self):
        return self.t


def test_a_comparison_with_no_room_on_the_gpu_runs_again_on_the_cpu(monkeypatch):
    real = checker._compare
    seen = []

    def full_then_real(name, got, gold, naive, *rest):
        seen.append(gold)
        if isinstance(gold, _OnTheGpu):
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 512.00 MiB")
        return real(name, got, gold, naive, *rest)

    monkeypatch.setattr(checker, "_compare", full_then_real)
    gold = _t(1.0, 2.0)
    wrong = checker.compare("o", _OnTheGpu(gold + 1), _OnTheGpu(gold), _OnTheGpu(gold), torch.float64, "element", {})
    assert wrong is not None and wrong.bad == 2 and len(seen) == 2 and seen[1] is gold
    assert checker.compare("o", _OnTheGpu(gold), _OnTheGpu(gold), _OnTheGpu(gold), torch.float64, "element", {}) is None


def test_any_other_error_of_a_comparison_is_raised():
    gold = _t(1.0, 2.0)
    with pytest.raises(ValueError, match="unknown scope 'column'"):
        checker.compare("o", gold, gold, gold, torch.float64, "column", {})
    with pytest.raises(ValueError, match="naive model is not finite"):
        checker.compare("o", gold, gold, _t(1.0, float("inf")), torch.float64, "element", {})
