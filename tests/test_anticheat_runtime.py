"""The runtime layers of the anti-cheat, each on its own.

The static scan rejects most exploits before they run, which would leave the
checks in the worker and the judge untested. Here the scan is off and each
exploit must still be rejected, by the check named in the expected message.
The last cases fool the operator watch and every other check in the worker;
only the replay of their recorded launches on fresh inputs catches them. What
no runtime check catches yet is listed in problems/README.md ("Exploit
corpus"), not here.
"""

import json
from pathlib import Path

import pytest

from judge.options import Options
from judge.problems import find_problem
from judge.session import Session

ROOT = Path(__file__).resolve().parents[1]
R93 = ROOT / "problems" / "093-vector-add" / "submissions" / "rejected"
R94 = ROOT / "problems" / "094-softmax" / "submissions" / "rejected"

CASES = [
    ("93", R93 / "numpy_no_kernel.py", "no Triton kernel defined in"),
    ("93", R93 / "numpy_with_decoy_kernel.py", "computed some other way"),
    ("93", R93 / "redteam_thread.py", "started 1 thread"),
    ("93", R93 / "redteam_fork.py", "started 1 process"),
    ("93", R93 / "exploit_background_thread.py", "started 1 thread"),
    ("93", R93 / "redteam_custom_op_name.py", "redteam::clone"),
    ("93", R93 / "redteam_patch_wire_view.py", "torch.Tensor.detach"),
    ("93", R93 / "exploit_timer_patch.py", "torch.cuda.Event.elapsed_time"),
    ("93", R93 / "exploit_swaps_sync.py", "torch.cuda.synchronize"),
    ("93", R93 / "exploit_tf32_flag.py", "allow_tf32"),
    ("94", R94 / "redteam_softmax_custom_op.py", "::"),
    ("93", R93 / "exploit_dispatch_escape.py", "torch add (run with the operator watch switched off)"),
    ("93", R93 / "redteam_disable_dispatch.py", "torch add (run with the operator watch switched off)"),
    # issue 12, written anew: the dispatch guard under other names (PyTorch's operator record)
    ("93", R93 / "exploit2_dispatch_1.py", "torch add (run with the operator watch switched off)"),
    ("93", R93 / "exploit2_dispatch_2.py", "torch add (run with the operator watch switched off)"),
    ("93", R93 / "exploit2_dispatch_3.py", "(run with the operator watch switched off)"),
    ("93", R93 / "exploit2_dispatch_4.py", "torch add (redispatched below the operator watch)"),
    ("93", R93 / "exploit2_dispatch_5.py", "taken by a dispatch handler other than the judge's"),
    ("93", R93 / "exploit2_dispatch_6.py", "torch add (run with the operator watch switched off)"),
    # structural pattern matching
    ("93", R93 / "exploit2_match_1.py", "(run with the operator watch switched off)"),
    ("93", R93 / "exploit2_match_2.py", "worker.reply"),
    ("93", R93 / "exploit2_match_3.py", "torch add"),
    ("93", R93 / "exploit2_match_4.py", "(run with the operator watch switched off)"),
    # per-element Python callbacks, files mapped as tensors
    ("93", R93 / "exploit2_callback_1.py", "map_ (a Python function per element)"),
    ("93", R93 / "exploit2_callback_2.py", "map2_ (a Python function per element)"),
    ("93", R93 / "exploit2_callback_3.py", "apply_ (a Python function per element)"),
    ("93", R93 / "exploit2_bytes_2.py", "torch from_file"),
    # a kernel that does nothing, handed the output
    ("93", R93 / "exploit2_noop_1.py", "torch add"),
    ("93", R93 / "exploit2_noop_2.py", "torch.set_printoptions()"),
    # a replaced reply method (and reader) on the worker's instances
    ("93", R93 / "exploit2_reply_1.py", "worker.reply"),
    ("93", R93 / "exploit2_reply_2.py", "worker.reply"),
    ("93", R93 / "exploit2_reply_3.py", "reader.recv"),
    # malformed replies: RJ at the boundary, never IE
    ("93", R93 / "exploit2_malformed_1.py", "an output must be an object"),
    ("93", R93 / "exploit2_malformed_2.py", "an output must be an object"),
    ("93", R93 / "exploit2_malformed_3.py", "RecursionError"),
    ("93", R93 / "exploit2_malformed_4.py", "RecursionError"),
    # format strings read the per-run secret; the worker's descriptor redirected, every reply forged
    ("93", R93 / "exploit2_format_1.py", "reply channel was redirected"),
    # Per-element Python callbacks, also seen by the operator record (the static scan refuses them too).
    ("93", R93 / "redteam_map_callback.py", "map_ (a Python function per element)"),
    ("93", R93 / "redteam_bytes_roundtrip.py", "apply_ (a Python function per element)"),
    ("93", R93 / "redteam_hidden_compute.py", "map2_ (a Python function per element)"),
    ("94", R94 / "redteam_softmax_map_callback.py", "(a Python function per element)"),
    # A kernel whose interpreter rewriter was swapped for an empty kernel's; the sums done on the host (ctypes).
    ("93", R93 / "redteam_rewriter_swap.py", "the kernel add_kernel (it would run another function than its own)"),
    # A kernel Triton reads elsewhere than the file's text: a __wrapped__ inspect follows, the file rewritten
    # on disk for the first launch (integrity.rewired against the text read before the import).
    ("93", R93 / "exploit4_wraps_swaps_kernel_source.py", "the kernel vec_add (Triton compiled another source"),
    # Only the replay check catches these (judge.replay): the values come from plain Python over the
    # inputs' bytes, and a copy into an output that a do-nothing kernel is handed is all the watch sees.
    ("93", R93 / "exploit2_bytes_proc_mem.py", "a submission may not write beneath /proc"),
    ("93", R93 / "exploit2_bytes_repr_bits.py", "the replay check"),
    ("93", R93 / "exploit2_noop_proc_mem_tensor.py", "the replay check"),
    ("93", R93 / "redteam_replay_flood.py", "could not be replayed alone on fresh inputs, twice"),
    # (with the scan on, refused before it runs: not one of the replay-only cases below)
    ("93", R93 / "exploit3_timeit_generated_code.py", "data from outside your kernels reached"),
    # A kernel that runs otherwise in the worker than replayed: a constant it reads changed around its launch
    # (tl.constexpr's value, or rebound in its globals by a module the file wrote and imported), or a jit
    # helper swapped under its name; the answer written from the host (red team of 2026-12-03).
    ("93", R93 / "exploit5_constexpr_flip_resolver.py", "the constant DO_WORK (your file sets it to 1"),
    ("94", R94 / "exploit5_constexpr_rebound_by_helper.py", "the constant DO_WORK (your file sets it to 1"),
    ("93", R93 / "exploit5_helper_swapped_in_globals.py", "the kernel combine (the kernel add_kernel found another"),
    # The interpreter's own hook names defined by the file: its class runs inside the kernel, in the worker alone.
    ("93", R93 / "exploit5_interpreter_hook_in_globals.py", "the name _InterpreterComparison (Triton's interpreter"),
    # Triton's language swapped only around the launch (tl.store a no-op), put back before returning.
    ("93", R93 / "exploit5_language_swapped_during_launch.py", "triton.language.store (Triton's language"),
    # ... swapped by the kernel's pre-run hook, inside the launch, before the interpreter wraps the language.
    (
        "93",
        R93 / "exploit5_language_swapped_in_pre_run_hook.py",
        "triton.language.store (Triton's language was changed before the interpreter read it",
    ),
    # Code of the file's run inside the launch, after the interpreter patched the language: a callable grid
    # that changes the arguments it is given, a number whose __int__ does the work (red team of 2026-12-04).
    ("93", R93 / "exploit6_grid_sets_meta_host_work.py", "its grid changed the dictionary it was given"),
    ("94", R94 / "exploit6_softmax_grid_sets_meta_host_work.py", "its grid changed the dictionary it was given"),
    ("93", R93 / "exploit6_int_subclass_runs_in_launch.py", "(a number of class Length, whose own code would run"),
    ("94", R94 / "exploit6_softmax_int_subclass_runs_in_launch.py", "(a number of class Cols, whose own code"),
    # ... or what the launch calls swapped around it: range in the module's globals or the built-ins, the
    # interpreter's C store, torch.Tensor.data_ptr (a second pass the same day).
    ("93", R93 / "exploit6_global_range_in_module.py", "the name range (the kernel add_kernel reads it"),
    ("94", R94 / "exploit6_softmax_global_range_in_module.py", "the name range (the kernel softmax_kernel reads it"),
    ("93", R93 / "exploit6_builtins_range_through_dataclasses.py", "builtins.range (which the launch of the kernel"),
    ("93", R93 / "exploit6_interpreter_c_store_swapped.py", "triton._C.libtriton.interpreter.store (which the launch"),
    ("93", R93 / "exploit6_tensor_data_ptr_swapped.py", "torch.Tensor.data_ptr (which the launch of the kernel"),
    ("94", R94 / "exploit6_softmax_tensor_data_ptr_swapped.py", "torch.Tensor.data_ptr (which the launch of the"),
    # ... a dtype object's to_ir and the interpreter's builder object, the jit module's mangle_type (a third pass).
    ("93", R93 / "exploit6_dtype_to_ir_reaches_builder.py", "triton.language.core.int32.to_ir (which the launch"),
    ("93", R93 / "exploit6_jit_mangle_type_swapped.py", "triton.runtime.jit.mangle_type (which the launch"),
]
FAST = {
    "numpy_no_kernel",
    "numpy_with_decoy_kernel",
    "redteam_thread",
    "exploit2_noop_proc_mem_tensor",
    "exploit4_wraps_swaps_kernel_source",
    "exploit5_constexpr_flip_resolver",
}


@pytest.mark.corpus
@pytest.mark.parametrize(
    "pid,path,expect",
    [c if c[1].stem in FAST else pytest.param(*c, marks=pytest.mark.full) for c in CASES],
    ids=[c[1].stem for c in CASES],
)
def test_rejected_without_the_static_scan(pid, path, expect):
    options = Options(sandbox="process", seed=1, device="cpu", interpret=True, static_scan=False)
    report = Session(find_problem(pid), path, options).run()
    assert report.verdict.value != "AC", report.message
    if expect is not None:
        assert report.verdict.value == "RJ" and expect in report.message, f"{report.verdict.value}: {report.message}"


# Process state the file sets that the judge's own code in the worker runs under (red team 4): refused by the
# scan; with it off, the worker's failure is the file's (RTE), never IE.
@pytest.mark.corpus
@pytest.mark.full
@pytest.mark.parametrize(
    "name,expect",
    [
        ("redteam4_audit_hook_in_judges_code.py", "in the middle of a case"),
        ("redteam4_recursion_limit_low.py", "RecursionError"),
    ],
)
def test_process_state_the_file_sets_is_its_own_failure_without_the_scan(name, expect):
    options = Options(sandbox="process", seed=1, device="cpu", interpret=True, static_scan=False, group="small-ragged")
    report = Session(find_problem("93"), R93 / name, options).run()
    assert report.verdict.value == "RTE", f"{report.verdict.value}: {report.message}"
    assert expect in json.dumps(report.to_json()), report.message


REPLAY_ONLY = [c for c in CASES if "replay" in c[2]]


@pytest.mark.corpus
@pytest.mark.parametrize(
    "pid,path,expect",
    [c if c[1].stem in FAST else pytest.param(*c, marks=pytest.mark.full) for c in REPLAY_ONLY],
    ids=[c[1].stem for c in REPLAY_ONLY],
)
def test_only_the_replay_catches(pid, path, expect):
    # With every other check on (the static scan too) and the replay off, these pass: the replay is what stops them.
    options = Options(sandbox="process", seed=1, device="cpu", interpret=True, replay=False)
    report = Session(find_problem(pid), path, options).run()
    assert report.verdict.value == "AC", f"{report.verdict.value}: {report.message}"


# A kernel honest only where it is replayed (its constexpr function looks at the process): with the purity
# rule that refuses such a function switched off, and the static scan too, the replay's comparison of the
# worker's writes still catches it: replayed alone the launch computed the output, in the worker it left the
# output as it was, holding data from outside the kernels.
@pytest.mark.corpus
@pytest.mark.parametrize(
    "name", ["redteam_constexpr_probe.py", pytest.param("redteam_constexpr_state.py", marks=pytest.mark.full)]
)
def test_a_kernel_that_runs_otherwise_in_the_worker_is_caught_by_its_writes(name, monkeypatch):
    from judge import intake

    monkeypatch.setattr(intake, "_impure_constexpr_functions", lambda text: None)
    options = Options(
        sandbox="process", seed=1, device="cpu", interpret=True, static_scan=False, workers=1, group="small-ragged"
    )
    report = Session(find_problem("93"), R93 / name, options).run()
    assert report.verdict.value == "RJ" and "left out as it was" in report.message, report.message


@pytest.mark.corpus
def test_a_file_that_rewrites_itself_for_its_first_launch_is_caught(tmp_path):
    # Judged from a copy (it writes to its own file, as only the process sandbox allows): what the
    # interpreter made of the kernel is not what it makes of the text read before the import.
    import shutil

    path = tmp_path / "exploit4_rewrites_own_file.py"
    shutil.copy(Path(__file__).parent / "data" / path.name, path)
    before = path.read_text()
    options = Options(sandbox="process", seed=1, device="cpu", interpret=True)
    report = Session(find_problem("93"), path, options).run()
    assert report.verdict.value == "RJ", report.message
    assert "the kernel vec_add (Triton compiled another source" in report.message
    assert path.read_text() == before  # it put its text back: only the worker's snapshot knew
