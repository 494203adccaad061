"""Hints that are right, or none (judge.hints): each signature fires on its own corpus file and on no file it
does not fit.

The corpus part runs on recorded outputs: tests/data/hint_cases.pt holds, for every wrong-answer file of every
corpus, the outputs of a few of its failing cases (the smallest per hint), recorded from the interpreter by
``python tests/test_hints.py --record`` (it judges the wrong-answer corpora in quick mode, about 15 minutes
on 2 cores; run it after changing a wrong-answer file). A case's inputs and the golden answer are rebuilt from
its parameters, so the hints run exactly as in a judged case, in a few seconds. The hint files themselves
are also judged end to end (marked corpus), and their ``# expect:`` lines name the hint text.
"""

from __future__ import annotations

import io
import math
import sys
import time
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from judge import calls, checker, expected, hints, kit  # noqa: E402
from judge.problems import all_problems, find_problem  # noqa: E402

FIXTURE = ROOT / "tests" / "data" / "hint_cases.pt"

# Each hint file (problems/*/submissions/wrong_answer/hint_<name>.py) and the signature it must get.
HINT_FILES = {
    "094-softmax/submissions/wrong_answer/hint_masked_tail_other.py": "mistake:masked_tail_other",
    "094-softmax/submissions/wrong_answer/hint_missing_mask.py": "missing_mask",
    "094-softmax/submissions/wrong_answer/hint_max_subtraction.py": "mistake:max_subtraction",
    "095-matmul/submissions/wrong_answer/hint_contiguous_strides.py": "strides_as_contiguous",
    "095-matmul/submissions/wrong_answer/hint_fp16_accumulation.py": "mistake:low_precision_accumulator",
    "097-flash-attention-forward/submissions/wrong_answer/hint_lse_base2.py": "mistake:lse_base2",
    "097-flash-attention-forward/submissions/wrong_answer/hint_sm_scale.py": "mistake:sm_scale",
    "098-flash-attention-backward/submissions/wrong_answer/hint_missing_delta.py": "mistake:missing_delta",
}

# The hints that fit each other wrong-answer file (read against the bug its header describes). A file not
# listed must get no hint at all.
FITS = {
    "093-vector-add/submissions/wrong_answer/exploit_hardcoded_sizes.py": {"unwritten"},
    "093-vector-add/submissions/wrong_answer/exploit_noop_kernel.py": {"unwritten"},
    "093-vector-add/submissions/wrong_answer/exploit_returns_zeros.py": {"all_zeros"},
    "093-vector-add/submissions/wrong_answer/ignores_strides.py": {"strides_as_contiguous"},
    "093-vector-add/submissions/wrong_answer/nan_to_zero.py": {"nonfinite_expected"},
    "093-vector-add/submissions/wrong_answer/tail_dropped.py": {"unwritten"},
    "093-vector-add/submissions/wrong_answer/exploit7_flag_written_through_proc_mem.py": {"unwritten"},
    "094-softmax/submissions/wrong_answer/block_capped_no_loop.py": {"unwritten"},  # columns from 1024 on
    "094-softmax/submissions/wrong_answer/ignores_row_stride.py": {"strides_as_contiguous"},
    "094-softmax/submissions/wrong_answer/no_max_subtraction.py": {"mistake:max_subtraction"},
    "094-softmax/submissions/wrong_answer/online_no_rescale.py": {"row_factor"},  # each row's sum is off
    "094-softmax/submissions/wrong_answer/partial_sum_last_tile.py": {"row_factor"},  # each row's sum is off
    "094-softmax/submissions/wrong_answer/tail_other_zero.py": {"mistake:masked_tail_other"},
    "095-matmul/submissions/wrong_answer/fp16_accumulator.py": {"mistake:low_precision_accumulator"},
    "095-matmul/submissions/wrong_answer/fp16_operands.py": {"all_zeros"},  # tiny values underflow in float16
    "095-matmul/submissions/wrong_answer/ignores_strides.py": {"strides_as_contiguous"},
    "095-matmul/submissions/wrong_answer/k_tail_dropped.py": {"all_zeros"},  # K < BLOCK_K: the loop never runs
    "095-matmul/submissions/wrong_answer/mask_off_by_one.py": {"unwritten"},
    "096-rmsnorm/submissions/wrong_answer/block_capped.py": {"unwritten"},
    "096-rmsnorm/submissions/wrong_answer/eps_outside_sqrt.py": {"row_factor"},  # the row's rstd is off
    "096-rmsnorm/submissions/wrong_answer/ignores_row_stride.py": {"strides_as_contiguous"},
    "096-rmsnorm/submissions/wrong_answer/layernorm_variance.py": {"row_factor"},
    "096-rmsnorm/submissions/wrong_answer/looped_weight_offset.py": {"last_block"},  # the offsets it loads with
    "096-rmsnorm/submissions/wrong_answer/mean_over_block.py": {"row_factor", "constant_factor"},
    "096-rmsnorm/submissions/wrong_answer/missing_eps.py": {"row_factor"},
    "096-rmsnorm/submissions/wrong_answer/stats_in_input_dtype.py": {"row_factor"},  # zero rows: the sum overflowed
    "097-flash-attention-forward/submissions/wrong_answer/assumes_contiguous.py": {"strides_as_contiguous"},
    "097-flash-attention-forward/submissions/wrong_answer/causal_strict_mask.py": {"mistake:causal_strict"},
    # With N = 1 a softmax at scale * log2(e) gives exactly log2(e) times the lse: both models fit then.
    "097-flash-attention-forward/submissions/wrong_answer/exp_with_log2e_scale.py": {
        "mistake:sm_scale",
        "mistake:lse_base2",
    },
    "097-flash-attention-forward/submissions/wrong_answer/ignores_sm_scale.py": {"mistake:sm_scale"},
    "097-flash-attention-forward/submissions/wrong_answer/lse_base2.py": {"mistake:lse_base2"},
    "097-flash-attention-forward/submissions/wrong_answer/no_key_tail_mask.py": {"mistake:masked_tail_other"},
    "097-flash-attention-forward/submissions/wrong_answer/no_max_subtraction.py": {"mistake:max_subtraction"},
    "098-flash-attention-backward/submissions/wrong_answer/causal_off_by_one.py": {"mistake:causal_strict"},
    "098-flash-attention-backward/submissions/wrong_answer/dq_grid_floor.py": {"unwritten"},
    "098-flash-attention-backward/submissions/wrong_answer/drops_delta_term.py": {"mistake:missing_delta"},
    "098-flash-attention-backward/submissions/wrong_answer/ds_missing_scale.py": {"mistake:sm_scale"},
    "098-flash-attention-backward/submissions/wrong_answer/exp2_with_natural_lse.py": {"mistake:lse_base"},
    "098-flash-attention-backward/submissions/wrong_answer/ignores_sm_scale.py": {"mistake:sm_scale"},
    # Every gradient NaN (inf * 0 from the unmasked keys): the hint says "never written, or every value NaN".
    "098-flash-attention-backward/submissions/wrong_answer/no_key_mask.py": {"unwritten"},
    "099-compile-safe-add/submissions/wrong_answer/ignores_strides.py": {"strides_as_contiguous"},
    "099-compile-safe-add/submissions/wrong_answer/last_element_dropped.py": {"unwritten"},
    **{f: {h} for f, h in HINT_FILES.items()},
}

# Wrong answers caught before any value is compared (type, dtype, shape, writes into inputs): no hint to give.
NO_VALUES = {
    "093-vector-add/submissions/wrong_answer/always_float32.py",
    "093-vector-add/submissions/wrong_answer/exploit_zeroes_inputs.py",
    "093-vector-add/submissions/wrong_answer/returns_list_of_floats.py",
    "093-vector-add/submissions/wrong_answer/returns_tuple.py",
    "093-vector-add/submissions/wrong_answer/writes_into_input.py",
    "093-vector-add/submissions/wrong_answer/wrong_shape.py",
    "093-vector-add/submissions/wrong_answer/redteam4_returns_float8_view.py",
    "093-vector-add/submissions/wrong_answer/redteam4_returns_meta_tensor.py",
    "093-vector-add/submissions/wrong_answer/redteam4b_output_expanded_past_memory.py",
    "093-vector-add/submissions/wrong_answer/redteam4b_output_nine_dims.py",
    "095-matmul/submissions/wrong_answer/returns_float32.py",
    "097-flash-attention-forward/submissions/wrong_answer/redteam4_namedtuple_return.py",
    # 99's call modes fail these before any value: a graph break, no gradient (judge.calls)
    "099-compile-safe-add/submissions/wrong_answer/custom_op_without_fake.py",
    "099-compile-safe-add/submissions/wrong_answer/no_autograd.py",
    "099-compile-safe-add/submissions/wrong_answer/plain_jit_wrapper.py",
    "099-compile-safe-add/submissions/wrong_answer/redteam4_fake_impl_lies_about_shape.py",
}


def _rel(problem, path: Path) -> str:
    return str(path.relative_to(problem.directory.parent))


WA_FILES = {
    _rel(p, path) for p in all_problems() if p.kind == "kernel" for verdict, path in p.corpus() if verdict == "WA"
}


def _load():
    return torch.load(FIXTURE, weights_only=True)


def _hint_of(record: dict):
    """The hint of a recorded output, computed as a judged case computes it (judge.rules.outputs)."""
    problem = find_problem(record["file"][:3])
    params = dict(record["params"])
    inputs = problem.golden.make_inputs(dict(params), kit.generator(params["seed"]))
    answers = expected.for_inputs(problem, inputs, params, "cpu")
    specs = list(problem.outputs) + list(problem.grad_outputs)
    index = [o.name for o in specs].index(record["output"])
    if index >= len(problem.outputs):  # a gradient of a grad group (judge.calls): the case's cotangents
        calls.add_gradients(problem, answers, inputs, calls.cotangents(answers, params))
    spec = specs[index]
    case = hints.Case(problem, answers.params, answers.inputs, answers.device)
    return checker.compare(
        spec.name,
        record["got"],
        answers.golden[index],
        answers.naive[index],
        answers.dtypes[index],
        spec.scope,
        problem.check,
        problem.check.get("dim_names", {}).get(spec.name),
        case=case,
        index=index,
    )


@pytest.fixture(scope="module")
def recorded():
    return [(r, _hint_of(r)) for r in _load()]


def test_fixture_covers_every_wrong_answer_file():
    files = {r["file"] for r in _load()}
    missing = WA_FILES - files - NO_VALUES
    assert not missing, f"no recorded outputs for {sorted(missing)}: run python tests/test_hints.py --record"
    assert set(HINT_FILES) <= WA_FILES, "a hint file is missing from the corpus"
    assert not (set(FITS) - WA_FILES), f"FITS names files not in the corpus: {sorted(set(FITS) - WA_FILES)}"


def test_each_hint_file_gets_its_hint(recorded):
    for name, want in HINT_FILES.items():
        got = [m.hint_id for r, m in recorded if r["file"] == name]
        assert got and all(h == want for h in got), (name, got)


def test_no_file_gets_a_hint_that_does_not_fit(recorded):
    wrong = [
        (r["file"], m.hint_id, {k: v for k, v in r["params"].items() if k != "seed"}, m.hint[:160])
        for r, m in recorded
        if m.hint_id and m.hint_id not in FITS.get(r["file"], set())
    ]
    assert not wrong, "\n".join(map(str, wrong))


# ---------------------------------------------------------------------- synthetic signatures


def _compare(got, gold, dtype=torch.float32, scope="row", params=None, inputs=None, problem=None):
    gold = gold.double()
    return checker.compare(
        "out", got.to(dtype), gold, gold, dtype, scope, {}, case=hints.Case(problem, params or {}, inputs, "cpu")
    )


def test_nan_outputs_are_counted_not_given_an_error_size():
    gold = torch.rand(4, 8, dtype=torch.float64) + 0.5
    got = gold.clone()
    got[:, :5] = float("nan")
    got[0, 6] = gold[0, 6] * 1.5
    m = _compare(got, gold)
    assert "20 NaN where finite values were expected" in m.message
    assert "1 values outside the tolerance (largest error" in m.message


def test_scale_factors_name_the_constant():
    gold = torch.rand(4, 16, dtype=torch.float64) + 0.5
    m = _compare(gold * (1 / math.log(2)), gold)
    assert m.hint_id == "constant_factor" and "log2(e)" in m.hint
    m = _compare(gold * 8, gold, params={"d": 64})
    assert m.hint_id == "constant_factor" and "sqrt(d) = sqrt(64)" in m.hint
    m = _compare(gold * 1.7, gold)
    assert "times 1.7: a constant factor is off" in m.hint


def test_no_scale_hint_beside_nan():
    # The old hint read "times 0.8891: a scale factor is off" next to NaN samples.
    gold = torch.rand(6, 32, dtype=torch.float64) + 0.5
    got = gold * 0.8891
    got[1:, :] = float("nan")
    m = _compare(got, gold)
    assert m.hint_id != "constant_factor" and "scale" not in m.hint


def test_noise_gets_no_hint():
    gen = torch.Generator().manual_seed(0)
    gold = torch.rand(8, 64, generator=gen, dtype=torch.float64) + 0.5
    got = gold + 0.1 * torch.randn(8, 64, generator=gen, dtype=torch.float64)
    assert _compare(got, gold).hint == ""


def test_low_precision_noise_in_float16_rows():
    gen = torch.Generator().manual_seed(1)
    gold = torch.rand(16, 256, generator=gen, dtype=torch.float64) + 0.5
    got = gold * (1 + 3e-3 * torch.randn(16, 256, generator=gen, dtype=torch.float64))
    m = _compare(got, gold, dtype=torch.float16, params={"K": 4096})
    assert m.hint_id == "low_precision" and "(K = 4096)" in m.hint and "float32" in m.hint
    # The same relative noise in a float32 output is not float16 arithmetic: no hint.
    assert _compare(got, gold, dtype=torch.float32).hint_id == ""


def test_zeros_only_when_the_whole_output_is_zero():
    gold = torch.rand(4, 8, dtype=torch.float64) + 0.5
    got = gold.clone()
    got[2] = 0
    m = _compare(got, gold, scope="element")
    assert "nothing was computed" not in m.hint
    m = _compare(torch.zeros(4, 8), gold)
    assert m.hint_id == "all_zeros" and "zeros where values were expected" in m.hint


def test_last_partial_block_never_written():
    gold = torch.rand(1000, dtype=torch.float64) + 0.5
    got = gold.clone()
    got[896:] = float("nan")
    m = _compare(got, gold, scope="element")
    assert m.hint_id == "unwritten" and "896-999 of 1000" in m.hint and "multiple of 128" in m.hint


def test_masked_tail_model_on_softmax():
    p94 = find_problem("94")
    params = {"M": 3, "N": 100, "dtype": "float32", "layout": "contiguous", "values": "negative", "seed": 5}
    inputs = p94.golden.make_inputs(dict(params), kit.generator(5))
    x = inputs[0].values.double()
    got = torch.softmax(torch.cat([x, torch.zeros(3, 28, dtype=torch.float64)], -1), -1)[:, :100]
    m = _compare(got, torch.softmax(x, -1), params=params, inputs=inputs, problem=p94)
    assert m.hint_id == "mistake:masked_tail_other" and "28 masked lanes" in m.hint
    # The right answer perturbed otherwise gets no masked-tail hint.
    m = _compare(torch.softmax(x * 1.01, -1), torch.softmax(x, -1), params=params, inputs=inputs, problem=p94)
    assert m is None or m.hint_id != "mistake:masked_tail_other"


def test_a_failing_signature_is_skipped(monkeypatch):
    def broken(w):
        raise RuntimeError("boom")

    monkeypatch.setattr(hints, "HINTS", [broken, *hints.HINTS])
    gold = torch.rand(4, 16, dtype=torch.float64) + 0.5
    assert _compare(gold * 1.7, gold).hint_id == "constant_factor"


# ---------------------------------------------------------------------- end to end


# One file per problem in the README's command (the path from a judging to its hint; each file's hint is checked
# on its recorded outputs above); the others under -m full.
END_TO_END = {"hint_missing_mask", "hint_fp16_accumulation", "hint_sm_scale", "hint_missing_delta"}


@pytest.mark.corpus
@pytest.mark.parametrize(
    "name",
    [n if Path(n).stem in END_TO_END else pytest.param(n, marks=pytest.mark.full) for n in sorted(HINT_FILES)],
    ids=lambda n: Path(n).stem,
)
def test_hint_files_end_to_end(name):
    from judge.options import Options
    from judge.selftest import judge_one

    problem = find_problem(name[:3])
    path = problem.directory.parent / name
    check = judge_one(
        problem,
        "WA",
        path,
        Options(device="cpu", interpret=True, sandbox="process", seed=1, quick=True, speed=False, shrink_seconds=10),
    )
    assert check.verdict == "WA", check.message
    ids = [
        ((g.get("failure") or {}).get("details") or {}).get("hint_id")
        for g in check.report["groups"]
        if not g["passed"]
    ]
    assert HINT_FILES[name] in ids, ids
    assert not check.missing_text, check.missing_text


# ---------------------------------------------------------------------- recording the fixture


def record(files=None, per_hint: int = 2, max_numel: int = 40_000) -> None:
    """Judge the wrong-answer corpora (quick mode, interpreter) and keep, per file and hint, the smallest
    failing outputs: the fixture the corpus tests above read."""
    from judge.options import Options
    from judge.selftest import judge_one

    seen: list = []
    original = checker.compare

    def spy(name, got, gold, naive, dtype, scope, check, dim_names=None, case=None, index=0):
        m = original(name, got, gold, naive, dtype, scope, check, dim_names, case=case, index=index)
        if m is not None and case is not None and case.params:
            seen.append(
                {"params": dict(case.params), "output": name, "got": got.detach().cpu().clone(), "hint_id": m.hint_id}
            )
        return m

    checker.compare = spy
    out = []
    options = Options(
        device="cpu", interpret=True, sandbox="process", seed=1, quick=True, speed=False, shrink_seconds=20
    )
    try:
        for p in all_problems():
            for verdict, path in p.corpus():
                name = _rel(p, path)
                if verdict != "WA" or (files and not any(f in name for f in files)):
                    continue
                seen.clear()
                started = time.monotonic()
                judge_one(p, "WA", path, options)
                kept: dict = {}
                for r in sorted(seen, key=lambda r: r["got"].numel()):
                    bucket = kept.setdefault(r["hint_id"], [])
                    if len(bucket) < per_hint and r["got"].numel() <= max_numel:
                        bucket.append(dict(r, file=name))
                out += [r for rs in kept.values() for r in rs]
                print(f"{name}: {sum(map(len, kept.values()))} cases, {time.monotonic() - started:.0f} s", flush=True)
    finally:
        checker.compare = original
    if files and FIXTURE.exists():  # re-record some files: keep the others' cases
        out = [r for r in _load() if not any(f in r["file"] for f in files)] + out
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    torch.save(out, buf)
    FIXTURE.write_bytes(buf.getvalue())
    print(f"{len(out)} cases written to {FIXTURE}")


if __name__ == "__main__":
    if sys.argv[1:2] != ["--record"]:
        sys.exit("usage: python tests/test_hints.py --record [FILE-SUBSTRING ...]")
    record(sys.argv[2:] or None)
