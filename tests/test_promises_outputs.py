"""What the returned values must be (judge.rules.outputs) and where they must come from (the provenance rules),
with the one-line message a student reads for each, on hand-made records (no worker).

In order, the first failure decides, all WA: the return type (the tensor itself, or a tuple of the problem's
outputs), each item an exact torch.Tensor on the inputs' device with the expected dtype and shape, the inputs left
unchanged, no output sharing memory with an input, every value within the tolerance.
"""

from types import SimpleNamespace

import pytest
import torch

from judge.expected import Expected
from judge.replies.records import Evidence, Returned
from judge.rules import Context, custom_op, kernel_wrote
from judge.rules import outputs as rule
from judge.verdicts import Verdict

GOLD_O = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64)
GOLD_LSE = torch.tensor([0.5, 0.25], dtype=torch.float64)
GOLD_DQ = torch.tensor([[0.0, 1.0], [1.0, 0.0]], dtype=torch.float64)


def _spec(name, scope="row"):
    return SimpleNamespace(name=name, scope=scope)


ATTENTION = SimpleNamespace(
    outputs=[_spec("o"), _spec("lse", "element")],
    entry_point="attention",
    factory=None,
    check={"factor": 2.0, "ulps": 2.0},
)
ONE = SimpleNamespace(outputs=[_spec("out", "element")], entry_point="add", factory=None, check={})
FACTORY = SimpleNamespace(outputs=[_spec("out", "element")], entry_point="register", factory="namespace", check={})
WITH_GRAD = [_spec("o"), _spec("lse", "element"), _spec("dq")]  # a grad group: dq derived after the outputs


def _out(t, **kw):
    base = dict(
        kind="tensor",
        dtype=str(t.dtype).removeprefix("torch."),
        shape=tuple(t.shape),
        device="cpu",
        kernel_wrote=True,
        tensor=t,
    )
    return Returned(**{**base, **kw})


def _expected(*golds):
    return Expected(golden=list(golds), naive=[g.float() for g in golds], dtypes=[torch.float32] * len(golds))


RIGHT = [_out(GOLD_O.float()), _out(GOLD_LSE.float())]
EXP = _expected(GOLD_O, GOLD_LSE)


def _check(problem, returned, outs, expected=EXP, device="cpu", modified=(), specs=None):
    return rule.check(problem, returned, outs, expected, device, modified, specs=specs)


def test_right_outputs_pass_as_a_tuple_or_a_list():
    assert _check(ATTENTION, "tuple", RIGHT) is None
    assert _check(ATTENTION, "list", RIGHT) is None


@pytest.mark.parametrize(
    "returned,outs,message",
    [
        ("torch.Tensor", RIGHT[:1], "attention must return a tuple (o, lse); it returned torch.Tensor"),
        ("dict", RIGHT, "attention must return a tuple (o, lse); it returned dict"),
        ("tuple", RIGHT[:1], "attention must return a tuple (o, lse); it returned 1 items"),
        ("tuple", RIGHT + RIGHT[:1], "attention must return a tuple (o, lse); it returned 3 items"),
    ],
)
def test_a_multi_output_entry_must_return_a_tuple_of_its_outputs(returned, outs, message):
    wrong = _check(ATTENTION, returned, outs)
    assert wrong is not None and wrong.verdict is Verdict.WA and wrong.message == message


def test_a_single_output_entry_must_return_the_tensor_itself():
    one = [_out(GOLD_O.float())]
    wrong = _check(ONE, "tuple", one, _expected(GOLD_O))
    assert wrong.verdict is Verdict.WA and wrong.message == "add must return the tensor out itself, not a tuple"
    wrong = _check(FACTORY, "list", one, _expected(GOLD_O))
    assert wrong.message == "your operator must return the tensor out itself, not a list"
    assert _check(ONE, "torch.Tensor", one, _expected(GOLD_O)) is None


def test_a_grad_groups_gradients_follow_the_entrys_own_outputs():
    dq = _out(GOLD_DQ.float(), derived=True, kernel_wrote=False)
    expected = _expected(GOLD_O, GOLD_LSE, GOLD_DQ)
    assert _check(ATTENTION, "tuple", RIGHT + [dq], expected, specs=WITH_GRAD) is None
    # The entry's own outputs are counted without the derived ones.
    wrong = _check(ATTENTION, "tuple", RIGHT[:1] + [dq], expected, specs=WITH_GRAD)
    assert wrong.message == "attention must return a tuple (o, lse); it returned 1 items"
    # A single-output entry whose gradients did not come back (problem 99's grad group).
    add_grad = [_spec("out", "element"), _spec("grad_x", "element"), _spec("grad_y", "element")]
    wrong = _check(ONE, "torch.Tensor", [_out(GOLD_O.float())], _expected(GOLD_O, GOLD_O, GOLD_O), specs=add_grad)
    assert wrong.message == "no gradient came back for grad_x, grad_y"
    bad_dq = _out((GOLD_DQ + 1).float(), derived=True)
    assert _check(ATTENTION, "tuple", RIGHT + [bad_dq], expected, specs=WITH_GRAD).message.startswith("dq: ")


@pytest.mark.parametrize(
    "second,message",
    [
        (Returned(kind="other", type="int"), "lse must be exactly a torch.Tensor, not int"),
        (_out(GOLD_LSE.float(), device="cuda:0"), "lse is on cuda:0; expected it on the input's device (cpu)"),
        (_out(GOLD_LSE.half()), "lse has dtype float16; expected float32"),
        (_out(GOLD_LSE.float().reshape(2, 1)), "lse has shape (2, 1); expected (2,)"),
    ],
)
def test_each_item_must_be_an_exact_tensor_on_the_device_with_its_dtype_and_shape(second, message):
    wrong = _check(ATTENTION, "tuple", [RIGHT[0], second])
    assert wrong is not None and wrong.verdict is Verdict.WA and wrong.message == message


def _across(result):
    """What the judge reads of RESULT: described by the worker's code, framed and parsed as a reply is."""
    from judge.replies.parsers import parse_outputs
    from judge.untrusted.outputs import describe_outputs

    described, frames = describe_outputs(result)
    for d in described:
        d.pop("ptr_range", None)
        d.pop("strides", None)
    return parse_outputs(described, [bytes(raw) for _, raw in frames])


@pytest.mark.parametrize(
    "returned,message",
    [
        (GOLD_LSE.float().view(torch.float8_e4m3fn), "lse has dtype float8_e4m3fn; expected float32"),
        (torch.empty(2, device="meta"), "lse is on meta; expected it on the input's device (cpu)"),
        (torch.empty(2, dtype=torch.complex64), "lse has dtype complex64; expected float32"),
        (GOLD_LSE.float().view(2, *[1] * 8), "lse has shape (2, 1, 1, 1, 1, 1, 1, 1, 1); expected (2,)"),
        (torch.empty(1).expand(1 << 41), "lse has shape (2199023255552,); expected (2,)"),
    ],
)
def test_a_tensor_the_wire_cannot_carry_is_described_and_a_wrong_answer(returned, message):
    """A float8 view, a meta tensor, nine dimensions, an expanded view of 2**41 elements cross as their descriptor
    alone: WA naming the dtype, device or shape (red team 4: RJ, a reply not valid, RTE or MLE before)."""
    outs = _across((GOLD_O.float(), returned))
    assert outs[1].kind == "tensor" and outs[1].tensor is None
    wrong = _check(ATTENTION, "tuple", list(outs))
    assert wrong is not None and wrong.verdict is Verdict.WA and wrong.message == message


def test_a_tensor_the_wire_can_carry_never_crosses_without_its_values():
    """The worker's side is not trusted to say a tensor has no values: only one the wire cannot carry may."""
    from judge.replies.fields import MalformedReply
    from judge.replies.parsers import parse_outputs

    unsent = {"kind": "tensor", "dtype": "float32", "shape": [2], "device": "cpu", "sent": False}
    with pytest.raises(MalformedReply, match="came without its bytes"):
        parse_outputs([unsent], [])
    with pytest.raises(MalformedReply, match="shape"):
        parse_outputs([{**unsent, "device": "meta", "shape": "x"}], [])
    with pytest.raises(MalformedReply, match="shape"):
        parse_outputs([{**unsent, "shape": [1] * 65}], [])
    assert _across(GOLD_O.float())[0].tensor.equal(GOLD_O.float())


def test_an_output_on_the_gpu_is_on_the_inputs_device_whatever_its_index():
    on_gpu = [_out(GOLD_O.float(), device="cuda:1"), _out(GOLD_LSE.float(), device="cuda")]
    assert _check(ATTENTION, "tuple", on_gpu, device="cuda") is None


def test_inputs_must_be_left_unchanged():
    wrong = _check(ATTENTION, "tuple", RIGHT, modified=(0, 2))
    assert wrong.message == (
        "the entry point wrote into its inputs (argument 1, argument 3); it must leave them "
        "unchanged and return new tensors"
    )


def test_an_output_may_not_share_memory_with_an_input_but_a_derived_gradient_may():
    wrong = _check(ATTENTION, "tuple", [RIGHT[0], _out(GOLD_LSE.float(), aliases_input=True)])
    assert wrong.message == "lse shares memory with an input; return a new tensor"
    dq = _out(GOLD_DQ.float(), derived=True, aliases_input=True)
    assert _check(ATTENTION, "tuple", RIGHT + [dq], _expected(GOLD_O, GOLD_LSE, GOLD_DQ), specs=WITH_GRAD) is None


def test_a_wrong_value_says_where_with_its_details():
    wrong_o = GOLD_O.float().clone()
    wrong_o[1, 0] = 9.0
    wrong = _check(ATTENTION, "tuple", [_out(wrong_o), RIGHT[1]])
    assert wrong.verdict is Verdict.WA and wrong.message.startswith("o: 1 of 4 elements wrong")
    d = wrong.details
    assert d["output"] == "o" and d["bad"] == 1 and d["total"] == 4 and d["pattern"] == "rows 1 of 2; cols 0 of 2"
    assert d["samples"] == [
        {
            "index": [1, 0],
            "got": 9.0,
            "expected": 3.0,
            "allowed_error": pytest.approx(
                2 * torch.finfo(torch.float32).eps * 3.0
                + 2 * torch.finfo(torch.float32).eps * torch.finfo(torch.float32).tiny
            ),
        }
    ]
    assert set(d) == {"output", "pattern", "hint", "hint_id", "bad", "total", "samples"}


def test_the_first_failure_in_the_documented_order_decides():
    # A wrong dtype and a modified input and a wrong value: the dtype is named.
    wrong = _check(ATTENTION, "tuple", [_out((GOLD_O + 1).half()), RIGHT[1]], modified=(0,))
    assert wrong.message == "o has dtype float16; expected float32"
    # A modified input and a wrong value: the input is named.
    wrong = _check(ATTENTION, "tuple", [_out((GOLD_O + 1).float()), RIGHT[1]], modified=(0,))
    assert wrong.message.startswith("the entry point wrote into its inputs")


# ---------------------------------------------------------------------- provenance


def test_a_right_output_no_kernel_of_the_file_was_given_is_named():
    ctx = Context(file="mine.py", output_names=("o", "lse"))
    untouched = _out(GOLD_LSE.float(), kernel_wrote=False)
    found = kernel_wrote.check(Evidence(), (RIGHT[0], untouched), ctx)
    assert found.verdict is Verdict.RJ
    assert found.message == (
        "lse is right but none of your Triton kernels was given its memory: it was computed some other way"
    )
    # Past the names the problem gives, by its place; a derived gradient and a non-tensor are not its business.
    found = kernel_wrote.check(Evidence(), (RIGHT[0], RIGHT[1], untouched), ctx)
    assert found.message.startswith("output 3 is right")
    assert kernel_wrote.check(Evidence(), (_out(GOLD_DQ.float(), kernel_wrote=False, derived=True),), ctx) is None
    assert kernel_wrote.check(Evidence(), (Returned(kind="other", type="int"),), ctx) is None
    assert kernel_wrote.check(Evidence(), tuple(RIGHT), ctx) is None


@pytest.mark.parametrize(
    "graph,holds",
    [
        (("aten::add", "aten::mul", "aten::add"), "aten::add, aten::mul"),
        ((), "nothing"),
    ],
)
def test_a_compiled_graph_must_call_an_operator_of_the_given_namespace(graph, holds):
    ctx = Context(file="mine.py")
    found = custom_op.check(Evidence(graph_ops=graph), (), ctx)
    assert found.verdict is Verdict.WA
    assert found.message == (
        "torch.compile traced your callable inline: the graph it captured calls no operator of "
        f"the namespace register() was given (it holds: {holds})"
    )
    assert custom_op.check(Evidence(graph_ops=("aten::empty", "<ns>::add")), (), ctx) is None
    assert custom_op.check(Evidence(), (), ctx) is None  # not a compiled call


def test_a_wrong_value_gets_the_problems_hint_and_its_dimension_names():
    """The check hands the case (its problem, parameters, inputs, device) and the output's place to the hints, and
    the problem's dim_names to the pattern: softmax's masked-tail mistake is named, rows and cols by name."""
    from judge import expected, kit
    from judge.problems import find_problem

    p94 = find_problem("94")
    params = {"M": 3, "N": 100, "dtype": "float32", "layout": "contiguous", "values": "negative", "seed": 5}
    inputs = p94.golden.make_inputs(dict(params), kit.generator(5))
    answers = expected.for_inputs(p94, inputs, params, "cpu")
    x = inputs[0].values.double()
    got = torch.softmax(torch.cat([x, torch.zeros(3, 28, dtype=torch.float64)], -1), -1)[:, :100].float()
    wrong = rule.check(p94, "torch.Tensor", [_out(got)], answers, "cpu")
    assert wrong.details["hint_id"] == "mistake:masked_tail_other" and "28 masked lanes" in wrong.details["hint"]
    assert wrong.details["pattern"] == "all rows (0-2); all cols (0-99)"


def test_the_pattern_uses_the_problems_own_dimension_names():
    named = SimpleNamespace(**{**vars(ATTENTION), "check": {"dim_names": {"o": ["queries", "dims"]}}})
    wrong_o = GOLD_O.float().clone()
    wrong_o[1, 0] = 9.0
    wrong = _check(named, "tuple", [_out(wrong_o), RIGHT[1]])
    assert wrong.details["pattern"] == "queries 1 of 2; dims 0 of 2"
    wrong_lse = _check(named, "tuple", [RIGHT[0], _out(GOLD_LSE.float() + 1)])
    assert wrong_lse.details["pattern"] == "all elements (0-1)" and wrong_lse.details["output"] == "lse"
