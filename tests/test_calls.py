"""The call modes (problems/README.md, "Call modes"): what the judge sends and expects (judge.calls), how the
rules read a case's gradients and graph, and, in a fresh interpreter process, what the worker records
around a factory's operator, a compiled call and a grad call (judge.untrusted.own_ops, calls, compiled).
The corpus of problem 99 judges them end to end (tests/test_corpus.py)."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import torch

from judge import calls, expected, kit, rules
from judge.problems import find_problem
from judge.replies.records import Evidence, Returned
from judge.rules import outputs as output_rules

ROOT = Path(__file__).resolve().parents[1]
P99 = find_problem("99")


def _case(dtype="float16", layout="strided", n=37, seed=5):
    params = {"n": n, "dtype": dtype, "layout": layout, "scale": 1.0, "seed": seed}
    return params, P99.golden.make_inputs(dict(params), kit.generator(seed))


def test_the_worker_setup_and_the_case_spec():
    one, two = calls.worker_setup(P99, interpret=True), calls.worker_setup(P99, interpret=True)
    assert one["factory"] == "namespace" and one["compiling"] is True
    assert one["namespace"].startswith("ns_") and one["namespace"].isidentifier()
    assert one["namespace"] != two["namespace"]  # fresh for every worker
    assert calls.worker_setup(find_problem("93"), interpret=True) == {}
    by_name = {g.name: g for g in P99.groups}
    assert calls.case_spec(P99, by_name["views"], True) is None
    assert calls.case_spec(P99, by_name["compiled"], True) == {"mode": "compile", "backend": "eager"}
    assert calls.case_spec(P99, by_name["compiled"], False) == {"mode": "compile", "backend": "inductor"}
    assert calls.case_spec(P99, by_name["gradient"], True) == {"mode": "grad", "wrt": [0, 1]}
    # Inductor launches its own copy of the kernels: its group is not replayed; the interpreter's is.
    assert calls.replayed(P99, by_name["compiled"], interpret=True)
    assert not calls.replayed(P99, by_name["compiled"], interpret=False)


def test_cotangents_and_golden_gradients():
    params, inputs = _case()
    answers = expected.for_inputs(P99, inputs, params, "cpu")
    cots = calls.cotangents(answers, params)
    again = calls.cotangents(answers, params)
    assert len(cots) == 1 and cots[0].values.shape == (37,) and cots[0].dtype == torch.float16
    assert torch.equal(cots[0].values, again[0].values)  # from the case's seed
    calls.add_gradients(P99, answers, inputs, cots)
    assert len(answers.golden) == len(answers.naive) == len(answers.dtypes) == 3
    g = cots[0].values.double()
    # d(x + y)/dx = d(x + y)/dy = 1: both gradients are the cotangent, in float64 and in float16.
    assert torch.equal(answers.golden[1], g) and torch.equal(answers.golden[2], g)
    assert answers.naive[1].dtype == torch.float16 and answers.dtypes[1:] == [torch.float16, torch.float16]


def _returned(t, **kw):
    return Returned(
        "tensor", dtype=str(t.dtype).removeprefix("torch."), shape=tuple(t.shape), device="cpu", tensor=t, **kw
    )


def test_gradients_are_checked_for_values_only():
    params, inputs = _case(dtype="float32", layout="contiguous")
    answers = expected.for_inputs(P99, inputs, params, "cpu")
    cots = calls.cotangents(answers, params)
    calls.add_gradients(P99, answers, inputs, cots)
    out = (inputs[0].values + inputs[1].values).to(torch.float32)
    g = cots[0].values
    specs = P99.outputs_for(P99.groups[-1])
    right = [
        _returned(out, kernel_wrote=True),
        _returned(g, derived=True, aliases_input=True),
        _returned(g, derived=True, aliases_input=True),
    ]
    assert output_rules.check(P99, "torch.Tensor", right, answers, "cpu", specs=specs) is None
    wrong = output_rules.check(
        P99, "torch.Tensor", right[:2] + [_returned(-g, derived=True)], answers, "cpu", specs=specs
    )
    assert wrong is not None and wrong.message.startswith("grad_y")
    missing = output_rules.check(P99, "torch.Tensor", right[:1], answers, "cpu", specs=specs)
    assert missing is not None and "no gradient came back for grad_x, grad_y" in missing.message
    # The forward's own output must still have been written by a kernel; the gradients are the judge's.
    context = rules.Context(file="f.py", output_names=("out", "grad_x", "grad_y"))
    assert rules.violation(Evidence(own_launches={"k": 1}), right, context, stage="provenance") is None
    unwritten = [_returned(out)] + right[1:]
    found = rules.violation(Evidence(own_launches={"k": 1}), unwritten, context, stage="provenance")
    assert found is not None and found.message.startswith("out is right but")


def test_a_compiled_graph_must_call_the_namespaces_operator():
    context = rules.Context(file="f.py", output_names=("out",))
    ok = Evidence(own_launches={"k": 1}, graph_ops=("<ns>::add",))
    assert rules.violation(ok, (), context, stage="provenance") is None
    inline = Evidence(own_launches={"k": 1}, graph_ops=("empty", "triton_kernel_wrapper_mutation"))
    found = rules.violation(inline, (), context, stage="provenance")
    assert found.verdict.value == "WA" and "traced your callable inline" in found.message
    assert rules.violation(Evidence(own_launches={"k": 1}), (), context, stage="provenance") is None  # not compiled
    assert rules.error_verdict("contract").value == "WA"


SUBMISSION = textwrap.dedent("""
    import torch
    import triton
    import triton.language as tl
    from torch.library import register_autograd, triton_op, wrap_triton

    @triton.jit
    def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)

    def register(namespace, name="add", cheat=False):
        @triton_op(namespace + "::" + name, mutates_args=())
        def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            if cheat:
                return x + y
            out = torch.empty_like(x)
            wrap_triton(add_kernel)[(triton.cdiv(x.numel(), 64),)](x, y, out, x.numel(), BLOCK=64)
            return out
        register_autograd(namespace + "::" + name, lambda ctx, g: (g, g))
        return add

    def liar(namespace):
        @torch.library.custom_op(namespace + "::liar", mutates_args=())
        def op(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            out = torch.empty_like(x)
            add_kernel[(triton.cdiv(x.numel(), 64),)](x, y, out, x.numel(), BLOCK=64)
            return out

        @op.register_fake
        def _(x, y):
            return torch.empty(x.numel() + 1, dtype=torch.float64, device=x.device)

        return op

    def plain(x, y):
        out = torch.empty_like(x)
        add_kernel[(triton.cdiv(x.numel(), 64),)](x, y, out, x.numel(), BLOCK=64)
        return out

    def elsewhere():
        return torch.library.Library("aten", "IMPL")
""")

DRIVER = textwrap.dedent("""
    import json, os, sys
    os.environ["TRITON_INTERPRET"] = "1"
    sys.path.insert(0, sys.argv[2])
    import torch, triton, importlib.util
    import torch._dynamo
    from judge.untrusted import guard, own_ops
    from judge.untrusted.compiled import CompileFailed, Compiled, FakeMismatch
    guard.install(sys.argv[1], interpret=True, namespace="ns_secret", compiling=True)
    spec = importlib.util.spec_from_file_location("submission", sys.argv[1])
    sub = importlib.util.module_from_spec(spec); sys.modules["submission"] = sub; spec.loader.exec_module(sub)
    x, y = torch.randn(100), torch.randn(100)
    out = {}
    for name, op in (("honest", sub.register("ns_secret")), ("cheat", sub.register("ns_secret", "add2", True))):
        with guard.watching(verify=True, inputs=[(0, x), (1, y)]) as w:
            r = op(x, y)
        out[name] = {"own": dict(w.own_launches), "ops": dict(w.ops), "own_ops": dict(w.own_ops),
                     "right": bool(torch.equal(r, x + y)), "events": len(w.trace.events)}
        if name == "honest":
            c = Compiled(op, "eager", "ns_secret", os.path.realpath(sys.argv[1]))
            c.build([x, y])
            with guard.watching(verify=True) as w:
                r = c.run(x, y)
            out["compiled"] = {"graph": c.graph_ops, "own": dict(w.own_launches), "ops": dict(w.ops),
                               "right": bool(torch.equal(r, x + y))}
    c = Compiled(sub.liar("ns_secret"), "eager", "ns_secret", os.path.realpath(sys.argv[1]))
    c.build([x, y])
    try:
        out["liar"] = c.run(x, y).shape[0]
    except FakeMismatch as exc:
        out["liar"] = str(exc)
    try:
        Compiled(sub.plain, "eager", "ns_secret", os.path.realpath(sys.argv[1])).build([x, y])
        out["plain"] = "compiled"
    except CompileFailed as exc:
        out["plain"] = [str(exc), exc.frames]
    own_ops.take_libraries()
    sub.elsewhere()
    out["libraries"] = own_ops.take_libraries()
    print(json.dumps(out))
""")


def test_the_worker_looks_into_the_namespaces_operator(tmp_path):
    """Under the watch, an operator of the namespace the judge gave is the file's own: counted, and its body's
    operators watched like a wrapper's (x + y inside it is named); compiled with Dynamo its graph holds it and
    the compiled code runs under the watch, its outputs held to the graph's (a lying fake); a bare launch breaks the graph, named at the file's line; an
    operator library for another namespace is recorded."""
    sub = tmp_path / "mine.py"
    sub.write_text(SUBMISSION)
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, str(sub), str(ROOT)], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["honest"] == {"own": {"add_kernel": 1}, "ops": {}, "own_ops": {"add": 1}, "right": True, "events": 2}, (
        got
    )  # the allocation and the launch, for the replay
    assert got["cheat"]["ops"] == {"add": 1} and got["cheat"]["own_ops"] == {"add2": 1}, got
    assert got["compiled"] == {"graph": ["<ns>::add"], "own": {"add_kernel": 1}, "ops": {}, "right": True}, got
    assert got["liar"] == (  # a fake that lies about the output: not compile-safe (red team 4: AC before)
        "the traced graph's output 1 (from your operator's fake implementation, register_fake) is shape (101,), "
        "dtype float64 on cpu; the operator returned shape (100,), dtype float32 on cpu"
    ), got
    message, frames = got["plain"]
    assert "graph break" in message and "a Triton kernel launched outside a registered operator" in message
    assert frames and frames[-1]["function"] == "plain"
    assert len(got["libraries"]) == 1 and "namespace 'aten' (kind IMPL)" in got["libraries"][0]


def test_the_forwards_outputs_are_copied_before_the_backward_runs():
    # A grad group's forward outputs are read before the backward (the file's code, unwatched) runs: a copy, not a
    # view of the tensor's own memory, which the backward could rewrite after the call (issue 40).
    from judge.untrusted.outputs import describe_outputs

    out = torch.arange(6, dtype=torch.float32)
    _, viewed = describe_outputs(out)
    _, copied = describe_outputs(out, copy=True)
    before = bytes(copied[0][1])
    out.fill_(-1.0)  # what a backward could do to the forward's answer
    assert bytes(copied[0][1]) == before
    assert bytes(viewed[0][1]) != before  # (the view the worker sent otherwise: rewritten with the tensor)
