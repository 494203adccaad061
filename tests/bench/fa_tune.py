#!/usr/bin/env python3
"""One-shot GPU sweep for the FlashAttention references (problems 97 and 98).

For every [bench] shape of problems 97 (forward) and 98 (backward):

1. correctness: the new reference (and the old one, and SDPA as a yardstick)
   against a float32 PyTorch computation on a few (batch, head) slices, plus
   ragged and odd cases (N = 1, 77, 1000, 1537, 2049; D = 16, 32; float32
   inputs; transposed and K^T views; large and very negative scores);
2. speed: SDPA, the old reference (if found) and the new reference under
   several tile/warp/stage configurations (the new files' _launch knobs), each
   timed twice: triton.testing.do_bench (median, L2 flushed before each call)
   and CUDA-graph replay (10 calls per graph, CUDA events);
3. registers, spills and shared memory of every compiled kernel.

The backward's two main kernels are swept one axis at a time (dK/dV configs
with the default dQ config, then dQ configs with the default dK/dV config;
their times add up), then the best pair is timed. All kernels are compiled
first in parallel worker processes (the Triton cache is shared), so the run
stays within a few minutes; --deadline stops starting new timings.

    python tests/bench/fa_tune.py [--old DIR] [--deadline 225] [--workers N]

--old DIR holds the old references as 097-flash-attention-forward.py and
098-flash-attention-backward.py (default reference/old/ if it exists, else
the files of git's `main` if git can show them, else no old column). The
table goes to stdout; everything to $OUT/fa_tune.json if OUT is set (or
--json PATH). --cpu-smoke runs the plumbing on tiny shapes in Triton's
interpreter (no GPU; the times mean nothing).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FILES = {97: "097-flash-attention-forward.py", 98: "098-flash-attention-backward.py"}
NUM_SMS = 132

# ----------------------------------------------------------------------------- configurations swept
# Forward: (BLOCK_M, BLOCK_N, num_warps, num_stages, LAZY). The module's own
# choice for the shape is always added first.
FWD_D64 = [
    (128, 64, 8, 3, False),
    (128, 64, 4, 3, False),
    (128, 128, 8, 3, False),
    (128, 128, 8, 3, True),
    (128, 128, 8, 4, False),
    (128, 64, 4, 4, False),
]
FWD_D128 = [
    (128, 64, 8, 3, False),
    (128, 128, 8, 2, False),
    (128, 128, 8, 2, True),
    (128, 128, 8, 3, False),
    (128, 64, 8, 4, False),
    (128, 64, 4, 3, False),
]
FWD_SMALL = [
    (64, 64, 4, 3, False),
    (64, 32, 4, 3, False),
    (64, 64, 4, 4, False),
    (128, 64, 8, 3, False),
    (128, 128, 8, 3, False),
]
# Backward: dK/dV (BLOCK_M1, BLOCK_N1, warps, stages) and dQ (BLOCK_M2, BLOCK_N2, warps, stages).
DKDV_D64 = [(32, 128, 4, 3), (64, 128, 8, 3), (32, 128, 8, 3), (64, 128, 4, 3), (32, 128, 4, 5), (64, 64, 4, 3)]
DKDV_D128 = [(32, 64, 4, 3), (64, 128, 8, 3), (32, 128, 8, 3), (64, 128, 8, 2), (32, 128, 4, 3), (64, 64, 4, 3)]
DKDV_SMALL = [(32, 64, 4, 3), (32, 128, 4, 3), (64, 64, 4, 3), (16, 64, 4, 3), (64, 128, 8, 3)]
DQ_D64 = [(128, 32, 4, 3), (128, 64, 8, 3), (128, 32, 8, 3), (64, 64, 4, 3), (128, 64, 4, 3), (128, 32, 4, 5)]
DQ_D128 = [(64, 32, 4, 3), (128, 64, 8, 3), (128, 32, 8, 3), (128, 64, 8, 2), (64, 64, 4, 3), (128, 32, 4, 3)]
DQ_SMALL = [(64, 32, 4, 3), (64, 64, 4, 3), (128, 32, 4, 3), (32, 32, 4, 3), (128, 64, 8, 3)]

# Odd cases for correctness only (the default path of each reference).
# layout: contig | bnhd (heads interleaved, a transposed view) | kT (K stored as K^T).
CHECKS = [
    dict(B=1, H=3, N=77, D=16, dtype="float16", causal=False, layout="contig"),
    dict(B=2, H=2, N=1000, D=32, dtype="bfloat16", causal=True, layout="contig"),
    dict(B=1, H=2, N=77, D=64, dtype="float32", causal=True, layout="contig"),
    dict(B=1, H=2, N=300, D=128, dtype="float32", causal=False, layout="bnhd"),
    dict(B=2, H=4, N=333, D=128, dtype="float16", causal=False, layout="bnhd"),
    dict(B=1, H=2, N=1, D=64, dtype="float16", causal=True, layout="contig"),
    dict(B=2, H=3, N=129, D=64, dtype="bfloat16", causal=True, layout="kT"),
    dict(B=2, H=16, N=2049, D=128, dtype="bfloat16", causal=False, layout="bnhd"),  # big tiles, ragged
    dict(B=2, H=8, N=1537, D=64, dtype="float16", causal=True, layout="contig"),  # big tiles, ragged, causal
    dict(B=4, H=16, N=1024, D=128, dtype="float16", causal=True, layout="contig"),  # big tiles, even
    dict(B=1, H=4, N=500, D=64, dtype="float16", causal=False, layout="contig", qk_std=8.0),  # scores ~100s
    dict(B=1, H=2, N=300, D=32, dtype="float16", causal=True, layout="contig", q_mean=6.0),  # all scores < -88
]

STATE = {}  # per process: torch, triton, modules, device, smoke


def log(*a):
    print(*a, flush=True)


# ----------------------------------------------------------------------------- setup


def load_module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def find_old(arg: str | None) -> Path | None:
    """The directory with the old references, or None."""
    if arg:
        d = Path(arg)
        return d if all((d / f).exists() for f in FILES.values()) else None
    d = ROOT / "reference" / "old"
    if all((d / f).exists() for f in FILES.values()):
        return d
    tmp = Path(tempfile.mkdtemp(prefix="fa_old_"))
    try:
        for f in FILES.values():
            text = subprocess.run(
                ["git", "show", f"main:reference/{f}"], cwd=ROOT, capture_output=True, text=True, check=True, timeout=20
            ).stdout
            (tmp / f).write_text(text)
        return tmp
    except Exception:  # noqa: BLE001 - no git, no main: no old column
        return None


def init_state(old_dir: str | None, smoke: bool):
    if smoke:
        os.environ["TRITON_INTERPRET"] = "1"
    import torch
    import triton

    STATE.update(torch=torch, triton=triton, smoke=smoke, device="cpu" if smoke else "cuda")
    STATE["new"] = {p: load_module(ROOT / "reference" / f, f"fa_new_{p}") for p, f in FILES.items()}
    STATE["old"] = {p: load_module(Path(old_dir) / f, f"fa_old_{p}") for p, f in FILES.items()} if old_dir else None
    if not smoke:
        torch.backends.cuda.matmul.allow_tf32 = False  # the float32 references must be float32


def bench_shapes(smoke: bool):
    shapes = []
    for pid in (97, 98):
        toml = ROOT / "problems" / FILES[pid].replace(".py", "") / "problem.toml"
        for s in tomllib.loads(toml.read_text())["bench"]["shapes"]:
            s = {k.upper() if k in "bhnd" else k: v for k, v in s.items()}
            shp = dict(B=s["B"], H=s["H"], N=s["N"], D=s["D"], causal=bool(s["causal"]), dtype=s["dtype"])
            if smoke:  # tiny, float16 (the interpreter cannot do bfloat16), same code paths where possible
                shp.update(B=1, H=2, N=min(shp["N"], 160 if shp["N"] % 128 else 256), dtype="float16")
            shapes.append((pid, shp))
    return shapes


def shape_name(s: dict) -> str:
    return (
        f"B{s['B']} H{s['H']} N{s['N']} D{s['D']} {'causal' if s['causal'] else 'full'} "
        f"{ {'float16': 'fp16', 'bfloat16': 'bf16', 'float32': 'fp32'}[s['dtype']] }"
    )


def small_grid(s: dict) -> bool:
    return -(-s["N"] // 128) * s["B"] * s["H"] < NUM_SMS


def dedupe(items):
    out = []
    for x in items:
        if x not in out:
            out.append(x)
    return out


def fwd_configs(s: dict):
    default = tuple(STATE["new"][97]._config(s["B"], s["H"], s["N"], s["D"], dtype_of(s["dtype"])))
    fam = FWD_SMALL if small_grid(s) else (FWD_D128 if s["D"] > 64 else FWD_D64)
    return default, dedupe([default] + fam)


def bwd_configs(s: dict):
    dkdv, dq = STATE["new"][98]._config(s["B"], s["H"], s["N"], s["D"], dtype_of(s["dtype"]))
    dkdv, dq = tuple(dkdv), tuple(dq)
    if small_grid(s):
        fk, fq = DKDV_SMALL, DQ_SMALL
    elif s["D"] > 64:
        fk, fq = DKDV_D128, DQ_D128
    else:
        fk, fq = DKDV_D64, DQ_D64
    runs = [(dkdv, dq)] + [(c, dq) for c in dedupe(fk) if c != dkdv] + [(dkdv, c) for c in dedupe(fq) if c != dq]
    return (dkdv, dq), runs


def dtype_of(name: str):
    return getattr(STATE["torch"], name)


# ----------------------------------------------------------------------------- inputs


def make_qkv(s: dict, seed: int = 0):
    torch = STATE["torch"]
    g = torch.Generator(device=STATE["device"]).manual_seed(seed)
    B, H, N, D = s["B"], s["H"], s["N"], s["D"]
    dt = dtype_of(s["dtype"])
    layout = s.get("layout", "contig")

    def rnd(std=1.0, mean=0.0, kind="qv"):
        if layout == "bnhd":
            x = torch.randn((B, N, H, D), generator=g, device=STATE["device"]).transpose(1, 2)
        elif layout == "kT" and kind == "k":
            x = torch.randn((B, H, D, N), generator=g, device=STATE["device"]).transpose(2, 3)
        else:
            x = torch.randn((B, H, N, D), generator=g, device=STATE["device"])
        return (x * std + mean).to(dt)

    std, mean = s.get("qk_std", 1.0), s.get("q_mean", 0.0)
    q = rnd(std, mean)
    k = rnd(std, -mean, "k")
    v = rnd()
    do = rnd()
    return q, k, v, do


def scale_of(s):
    return 1.0 / math.sqrt(s["D"])


# ----------------------------------------------------------------------------- calls


def new_fwd(s, q, k, v, cfg):
    o, lse, kern = STATE["new"][97]._launch(q, k, v, s["causal"], None, *cfg)
    return o, lse, [kern]


def new_bwd(s, q, k, v, o, lse, do, cfgs):
    dq, dk, dv, kerns = STATE["new"][98]._launch(q, k, v, o, lse, do, s["causal"], None, cfgs[0], cfgs[1])
    return dq, dk, dv, kerns


def sdpa_fwd(s, q, k, v):
    torch = STATE["torch"]
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=s["causal"], scale=None)


def sdpa_prepare(s, q, k, v):
    torch = STATE["torch"]
    q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=s["causal"], scale=None)
    return q, k, v, out


def kern_info(kerns):
    info = []
    for kern in kerns:
        try:
            info.append(
                dict(
                    name=kern.name,
                    regs=kern.n_regs,
                    spills=kern.n_spills,
                    shared=kern.metadata.shared,
                    warps=kern.metadata.num_warps,
                    stages=kern.metadata.num_stages,
                )
            )
        except Exception as e:  # noqa: BLE001 - the interpreter has no compiled kernels
            info.append(dict(name=getattr(kern, "name", "?"), error=type(e).__name__))
    return info


# ----------------------------------------------------------------------------- precompile (worker processes)


def worker_init(old_dir, smoke):
    init_state(old_dir, smoke)


def run_task(task):
    """Run one call so that its kernels are compiled (and cached on disk); returns (task, seconds, error)."""
    t0 = time.time()
    try:
        kind, s, cfg = task
        q, k, v, do = make_qkv(s)
        if kind == "fwd":
            new_fwd(s, q, k, v, cfg)
        elif kind == "bwd":
            o, lse, _ = new_fwd(s, q, k, v, STATE["new"][97]._config(s["B"], s["H"], s["N"], s["D"], q.dtype))
            new_bwd(s, q, k, v, o, lse, do, cfg)
        elif kind == "old_fwd":
            STATE["old"][97].flash_attention_forward(q, k, v, s["causal"], None)
        elif kind == "old_bwd":
            o, lse = STATE["old"][97].flash_attention_forward(q, k, v, s["causal"], None)
            STATE["old"][98].flash_attention_backward(q, k, v, o, lse, do, s["causal"], None)
        elif kind == "check":
            o, lse = STATE["new"][97].flash_attention_forward(q, k, v, s["causal"], None)
            STATE["new"][98].flash_attention_backward(q, k, v, o, lse, do, s["causal"], None)
            if STATE["old"]:
                o, lse = STATE["old"][97].flash_attention_forward(q, k, v, s["causal"], None)
                STATE["old"][98].flash_attention_backward(q, k, v, o, lse, do, s["causal"], None)
        if not STATE["smoke"]:
            STATE["torch"].cuda.synchronize()
        return task, time.time() - t0, None
    except Exception as e:  # noqa: BLE001 - reported, and the config is skipped later
        return task, time.time() - t0, f"{type(e).__name__}: {str(e)[:300]}"


def precompile(waves, old_dir, smoke, workers, stop_at):
    """Run the task lists one wave after the other (a wave's kernels are cached before the next starts).

    Past stop_at (time.monotonic()) the tasks not yet started are dropped:
    their kernels then compile on first use in the main process.
    """
    errors = {}

    def note(task, err):
        if err:
            errors[repr(task)] = err

    if workers <= 1:
        for wave in waves:
            for t in wave:
                if time.monotonic() > stop_at:
                    errors["precompile"] = "stopped by its time budget"
                    return errors
                note(*run_task(t)[::2])
        return errors
    import multiprocessing as mp
    from concurrent.futures import TimeoutError as FutureTimeout

    ex = ProcessPoolExecutor(
        max_workers=workers, mp_context=mp.get_context("spawn"), initializer=worker_init, initargs=(old_dir, smoke)
    )
    try:
        for wave in waves:
            futs = [ex.submit(run_task, t) for t in wave]
            try:
                for f in as_completed(futs, timeout=max(1.0, stop_at - time.monotonic())):
                    note(*f.result()[::2])
            except FutureTimeout:
                errors["precompile"] = "stopped by its time budget"
                break
    finally:
        ex.shutdown(wait=False, cancel_futures=True)
    return errors


# ----------------------------------------------------------------------------- timing


def time_bench(fn):
    if STATE["smoke"]:
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3
    return STATE["triton"].testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


def time_graph(fn, calls=10, replays=5, stream=None):
    """ms per call from replays of a CUDA graph of `calls` calls (no L2 flush between calls)."""
    if STATE["smoke"]:
        return float("nan")
    torch = STATE["torch"]
    try:
        s = stream or torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):
                fn()
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=s):
            for _ in range(calls):
                fn()
        g.replay()
        torch.cuda.synchronize()
        times = []
        for _ in range(replays):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            g.replay()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) / calls)
        del g
        return statistics.median(times)
    except Exception as e:  # noqa: BLE001
        log(f"    graph capture failed: {type(e).__name__}: {str(e)[:200]}")
        return float("nan")


# ----------------------------------------------------------------------------- float32 references


def pick_heads(B, H):
    return sorted({0, (B * H) // 2, B * H - 1})


def ref_slices(s, q, k, v, do=None, o=None, heads=None):
    """float32 forward (o, lse) and, given do and o, backward (dq, dk, dv) on the chosen flat heads."""
    torch = STATE["torch"]
    B, H, N, D = q.shape
    sc = scale_of(s)
    out = []
    for i in heads:
        b, h = divmod(i, H)
        qf, kf, vf = q[b, h].float(), k[b, h].float(), v[b, h].float()
        sm = (qf @ kf.T) * sc
        if s["causal"]:
            sm = sm.masked_fill(torch.ones(N, N, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
        lse = torch.logsumexp(sm, -1)
        p = torch.exp(sm - lse[:, None])
        r = dict(o=p @ vf, lse=lse)
        if do is not None:
            gf, of = do[b, h].float(), o[b, h].float()
            r["dv"] = p.T @ gf
            dp = gf @ vf.T
            ds = p * (dp - (gf * of).sum(-1, keepdim=True))
            r["dq"] = (ds @ kf) * sc
            r["dk"] = (ds.T @ qf) * sc
        out.append(r)
    return out


def err_vs(ref, heads, H, **tensors):
    """max |x - ref| over the chosen heads for each named tensor, and whether all of x is finite."""
    torch = STATE["torch"]
    res = {}
    for name, x in tensors.items():
        if x is None:
            continue
        e = 0.0
        for r, i in zip(ref, heads):
            b, h = divmod(i, H)
            e = max(e, (x[b, h].float() - r[name]).abs().max().item())
        res[name] = e
        res[name + "_finite"] = bool(torch.isfinite(x).all().item())
    return res


def verdict(err_new: dict, err_yard: dict, dtype: str) -> bool:
    """OK when finite and within 3x the yardstick's (SDPA's) error plus a small floor."""
    ok = True
    for name, e in err_new.items():
        if name.endswith("_finite"):
            ok &= e
            continue
        if name == "lse":
            ok &= e <= (2e-4 if dtype == "float32" else 2e-3)
            continue
        y = err_yard.get(name, 0.0)
        floor = 1e-4 if dtype == "float32" else 4e-3
        ok &= e <= 3 * y + floor
    return bool(ok)


# ----------------------------------------------------------------------------- main parts


def check_case(s, results):
    torch = STATE["torch"]
    new97, new98 = STATE["new"][97], STATE["new"][98]
    q, k, v, do = make_qkv(s, seed=1)
    B, H = s["B"], s["H"]
    heads = pick_heads(B, H)
    row = dict(
        shape=shape_name(s),
        layout=s.get("layout", "contig"),
        extra={k_: s[k_] for k_ in ("qk_std", "q_mean") if k_ in s},
    )
    o, lse = new97.flash_attention_forward(q, k, v, s["causal"], None)
    ref = ref_slices(s, q, k, v, do, o, heads)
    so = sdpa_fwd(s, q, k, v)
    yard_f = err_vs(ref, heads, H, o=so)
    row["fwd_new"] = err_vs(ref, heads, H, o=o, lse=lse)
    row["fwd_sdpa"] = yard_f
    row["fwd_ok"] = verdict(row["fwd_new"], yard_f, s["dtype"])
    dq, dk, dv = new98.flash_attention_backward(q, k, v, o, lse, do, s["causal"], None)
    qq, kk, vv, out = sdpa_prepare(s, q, k, v)
    # SDPA's grads belong to its own o; the yardstick is the size of its rounding errors.
    sq, sk, sv = torch.autograd.grad(out, (qq, kk, vv), do)
    yard_b = err_vs(ref, heads, H, dq=sq, dk=sk, dv=sv)
    row["bwd_new"] = err_vs(ref, heads, H, dq=dq, dk=dk, dv=dv)
    row["bwd_sdpa"] = yard_b
    row["bwd_ok"] = verdict(row["bwd_new"], yard_b, s["dtype"])
    if STATE["old"]:
        oo, ol = STATE["old"][97].flash_attention_forward(q, k, v, s["causal"], None)
        row["fwd_old"] = err_vs(ref, heads, H, o=oo, lse=ol)
        gq, gk, gv = STATE["old"][98].flash_attention_backward(q, k, v, o, lse, do, s["causal"], None)
        row["bwd_old"] = err_vs(ref, heads, H, dq=gq, dk=gk, dv=gv)
    results.append(row)
    fmt = lambda d: " ".join(f"{k_}={v_:.1e}" for k_, v_ in d.items() if not k_.endswith("_finite"))  # noqa: E731
    log(
        f"  {'OK ' if row['fwd_ok'] and row['bwd_ok'] else 'BAD'} {row['shape']:<34} {row['layout']:<6} "
        f"fwd[{fmt(row['fwd_new'])}] sdpa[{fmt(yard_f)}]  bwd[{fmt(row['bwd_new'])}] sdpa[{fmt(yard_b)}]"
    )


def sweep_fwd(s, deadline, out):
    torch = STATE["torch"]
    q, k, v, do = make_qkv(s)
    B, H, N, D = s["B"], s["H"], s["N"], s["D"]
    flops = 4 * B * H * N * N * D // (2 if s["causal"] else 1)
    heads = pick_heads(B, H)
    ref = ref_slices(s, q, k, v, heads=heads)
    entry = dict(problem=97, shape=shape_name(s), params=s, flops=flops, runs=[])
    so = sdpa_fwd(s, q, k, v)
    yard = err_vs(ref, heads, H, o=so)
    entry["sdpa_err"] = yard

    def add(name, fn, cfg=None, kerns=None, errs=None):
        if time.monotonic() > deadline:
            entry["runs"].append(dict(name=name, cfg=cfg, skipped="deadline"))
            return
        r = dict(name=name, cfg=cfg, bench_ms=time_bench(fn), graph_ms=time_graph(fn))
        if kerns is not None:
            r["kernels"] = kern_info(kerns)
        if errs is not None:
            r["err"] = errs
            r["ok"] = verdict(errs, yard, s["dtype"])
        entry["runs"].append(r)

    add("sdpa", lambda: sdpa_fwd(s, q, k, v), errs=None)
    if STATE["old"]:
        oo, ol = STATE["old"][97].flash_attention_forward(q, k, v, s["causal"], None)
        add(
            "old",
            lambda: STATE["old"][97].flash_attention_forward(q, k, v, s["causal"], None),
            errs=err_vs(ref, heads, H, o=oo, lse=ol),
        )
    default, cfgs = fwd_configs(s)
    for cfg in cfgs:
        if time.monotonic() > deadline:
            entry["runs"].append(dict(name="new", cfg=cfg, skipped="deadline"))
            continue
        try:
            o, lse, kerns = new_fwd(s, q, k, v, cfg)
        except Exception as e:  # noqa: BLE001 - e.g. out of shared memory
            entry["runs"].append(dict(name="new", cfg=cfg, error=f"{type(e).__name__}: {str(e)[:200]}"))
            continue
        add(
            "new*" if cfg == default else "new",
            lambda cfg=cfg: new_fwd(s, q, k, v, cfg),
            cfg,
            kerns,
            err_vs(ref, heads, H, o=o, lse=lse),
        )
    out.append(entry)
    if not STATE["smoke"]:
        torch.cuda.empty_cache()
    print_entry(entry)


def sweep_bwd(s, deadline, out):
    torch = STATE["torch"]
    q, k, v, do = make_qkv(s)
    B, H, N, D = s["B"], s["H"], s["N"], s["D"]
    flops = 10 * B * H * N * N * D // (2 if s["causal"] else 1)
    heads = pick_heads(B, H)
    new97 = STATE["new"][97]
    o, lse = new97.flash_attention_forward(q, k, v, s["causal"], None)
    ref = ref_slices(s, q, k, v, do, o, heads)
    entry = dict(problem=98, shape=shape_name(s), params=s, flops=flops, runs=[])
    qq, kk, vv, out_s = sdpa_prepare(s, q, k, v)
    sg = torch.autograd.grad(out_s, (qq, kk, vv), do, retain_graph=True)
    yard = err_vs(ref, heads, H, dq=sg[0], dk=sg[1], dv=sg[2])
    entry["sdpa_err"] = yard

    def add(name, fn, cfg=None, kerns=None, errs=None, stream=None):
        if time.monotonic() > deadline:
            entry["runs"].append(dict(name=name, cfg=cfg, skipped="deadline"))
            return
        r = dict(name=name, cfg=cfg, bench_ms=time_bench(fn), graph_ms=time_graph(fn, stream=stream))
        if kerns is not None:
            r["kernels"] = kern_info(kerns)
        if errs is not None:
            r["err"] = errs
            r["ok"] = verdict(errs, yard, s["dtype"])
        entry["runs"].append(r)

    # SDPA backward only (its forward outside the timed call, as in the judge). For the
    # graph clock the forward runs on the capture stream, so that autograd puts the
    # backward there too.
    gstream = None
    if not STATE["smoke"]:
        gstream = torch.cuda.Stream()
        gstream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(gstream):
            qg, kg, vg, outg = sdpa_prepare(s, q, k, v)
        torch.cuda.current_stream().wait_stream(gstream)
        torch.cuda.synchronize()
    if time.monotonic() <= deadline:
        r = dict(
            name="sdpa",
            cfg=None,
            bench_ms=time_bench(lambda: torch.autograd.grad(out_s, (qq, kk, vv), do, retain_graph=True)),
        )
        r["graph_ms"] = (
            time_graph(lambda: torch.autograd.grad(outg, (qg, kg, vg), do, retain_graph=True), stream=gstream)
            if gstream is not None
            else float("nan")
        )
        entry["runs"].append(r)
    if STATE["old"]:
        old98 = STATE["old"][98]
        g = old98.flash_attention_backward(q, k, v, o, lse, do, s["causal"], None)
        add(
            "old",
            lambda: old98.flash_attention_backward(q, k, v, o, lse, do, s["causal"], None),
            errs=err_vs(ref, heads, H, dq=g[0], dk=g[1], dv=g[2]),
        )
    default, runs = bwd_configs(s)
    for cfgs in runs:
        if time.monotonic() > deadline:
            entry["runs"].append(dict(name="new", cfg=cfgs, skipped="deadline"))
            continue
        try:
            dq, dk, dv, kerns = new_bwd(s, q, k, v, o, lse, do, cfgs)
        except Exception as e:  # noqa: BLE001
            entry["runs"].append(dict(name="new", cfg=cfgs, error=f"{type(e).__name__}: {str(e)[:200]}"))
            continue
        add(
            "new*" if cfgs == default else "new",
            lambda cfgs=cfgs: new_bwd(s, q, k, v, o, lse, do, cfgs),
            cfgs,
            kerns,
            err_vs(ref, heads, H, dq=dq, dk=dk, dv=dv),
        )
    # The best pair: the fastest dK/dV config (timed with the default dQ) and
    # the fastest dQ config (timed with the default dK/dV), then timed together.
    ok_runs = [r for r in entry["runs"] if r["name"].startswith("new") and "bench_ms" in r and r.get("ok")]
    if ok_runs:
        best_kv = min((r for r in ok_runs if r["cfg"][1] == default[1]), key=lambda r: r["bench_ms"], default=None)
        best_q = min((r for r in ok_runs if r["cfg"][0] == default[0]), key=lambda r: r["bench_ms"], default=None)
        if best_kv and best_q:
            pair = (tuple(best_kv["cfg"][0]), tuple(best_q["cfg"][1]))
            if pair not in [tuple(r["cfg"]) for r in ok_runs] and time.monotonic() <= deadline:
                try:
                    dq, dk, dv, kerns = new_bwd(s, q, k, v, o, lse, do, pair)
                    add(
                        "best-pair",
                        lambda: new_bwd(s, q, k, v, o, lse, do, pair),
                        pair,
                        kerns,
                        err_vs(ref, heads, H, dq=dq, dk=dk, dv=dv),
                    )
                except Exception as e:  # noqa: BLE001
                    entry["runs"].append(dict(name="best-pair", cfg=pair, error=f"{type(e).__name__}: {e}"[:200]))
    out.append(entry)
    if not STATE["smoke"]:
        torch.cuda.empty_cache()
    print_entry(entry)


# ----------------------------------------------------------------------------- report


def cfg_text(cfg):
    if cfg is None:
        return "-"
    if isinstance(cfg[0], (list, tuple)):
        return "kv" + "/".join(map(str, cfg[0])) + " q" + "/".join(map(str, cfg[1]))
    return "/".join("L" if x is True else ("-" if x is False else str(x)) for x in cfg)


def print_entry(e):
    runs = e["runs"]
    sd = next((r for r in runs if r["name"] == "sdpa" and "bench_ms" in r), None)
    log(f"\n  [{e['problem']}] {e['shape']}   (cfg fwd: BM/BN/warps/stages/L=lazy; bwd: kv BM1/BN1/w/s  q BM2/BN2/w/s)")
    log(
        f"    {'what':<9} {'config':<34} {'do_bench':>9} {'graph':>9} {'TFLOP/s':>8} {'xSDPA':>6} {'xSDPA(g)':>8}"
        f"  {'ok':<3} regs/spills"
    )
    for r in runs:
        if "bench_ms" not in r:
            log(f"    {r['name']:<9} {cfg_text(r.get('cfg')):<34} {r.get('error') or r.get('skipped')}")
            continue
        tf = e["flops"] / (r["bench_ms"] * 1e-3) / 1e12
        x = sd["bench_ms"] / r["bench_ms"] if sd else float("nan")
        xg = sd["graph_ms"] / r["graph_ms"] if sd and r["graph_ms"] == r["graph_ms"] else float("nan")
        regs = " ".join(f"{k['regs']}/{k['spills']}" for k in r.get("kernels", []) if "regs" in k)
        ok = "" if "ok" not in r else ("ok" if r["ok"] else "BAD")
        log(
            f"    {r['name']:<9} {cfg_text(r.get('cfg')):<34} {r['bench_ms']:9.4f} {r['graph_ms']:9.4f} {tf:8.1f} "
            f"{x:6.3f} {xg:8.3f}  {ok:<3} {regs}"
        )


def summary(entries):
    lines = [
        "",
        "=" * 118,
        "SUMMARY: time ratio SDPA / ours (> 1 = faster than SDPA), do_bench clock [graph clock]",
        f"{'prob':<5}{'shape':<36}{'old':>16}{'new default':>18}{'best new':>18}  best config",
    ]
    for e in entries:
        runs = [r for r in e["runs"] if "bench_ms" in r]
        sd = next((r for r in runs if r["name"] == "sdpa"), None)
        if not sd:
            continue

        def fmt(r):
            if not r:
                return "-"
            g = sd["graph_ms"] / r["graph_ms"] if r["graph_ms"] == r["graph_ms"] else float("nan")
            return f"{sd['bench_ms'] / r['bench_ms']:.3f} [{g:.3f}]"

        old = next((r for r in runs if r["name"] == "old"), None)
        dflt = next((r for r in runs if r["name"] == "new*"), None)
        news = [r for r in runs if r["name"] in ("new", "new*", "best-pair") and r.get("ok", True)]
        best = min(news, key=lambda r: r["bench_ms"]) if news else None
        lines.append(
            f"{e['problem']:<5}{e['shape']:<36}{fmt(old):>16}{fmt(dflt):>18}{fmt(best):>18}  "
            f"{cfg_text(best['cfg']) if best else '-'}"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", default=None, help="directory with the old 097-/098- reference files")
    ap.add_argument("--deadline", type=float, default=225.0, help="seconds after which no new timing starts")
    ap.add_argument("--workers", type=int, default=0, help="compile processes (default: CPUs - 2, at most 14)")
    ap.add_argument("--json", default=None, help="JSON path (default $OUT/fa_tune.json if OUT is set)")
    ap.add_argument("--cpu-smoke", action="store_true", help="tiny shapes in Triton's interpreter, no GPU")
    ap.add_argument("--only", choices=["97", "98"], default=None)
    args = ap.parse_args()
    t_start = time.monotonic()
    deadline = t_start + args.deadline
    smoke = args.cpu_smoke
    old = find_old(args.old)
    old_dir = str(old) if old else None
    init_state(old_dir, smoke)
    torch, triton = STATE["torch"], STATE["triton"]
    dev = "CPU (interpreter smoke run)" if smoke else torch.cuda.get_device_name()
    log(f"fa_tune: {dev}, torch {torch.__version__}, triton {triton.__version__}, Python {sys.version.split()[0]}")
    log(f"old references: {old_dir or 'not found (no old column)'}")
    shapes = [x for x in bench_shapes(smoke) if args.only is None or str(x[0]) == args.only]
    checks = [dict(c) for c in CHECKS]
    if smoke:
        for c in checks:
            c.update(
                N=min(c["N"], 130), B=1, H=min(c["H"], 2), dtype="float16" if c["dtype"] == "bfloat16" else c["dtype"]
            )

    # 1. compile everything in parallel worker processes (Triton's on-disk cache is shared).
    # Wave 1: each shape's default configuration (whose kernels the other runs
    # of the sweep share) and the check cases; wave 2: everything else.
    first, rest = [], []
    for pid, s in shapes:
        if pid == 97:
            default, cfgs = fwd_configs(s)
            first += [("fwd", s, default)] + ([("old_fwd", s, None)] if old_dir else [])
            rest += [("fwd", s, c) for c in cfgs if c != default]
        else:
            default, runs = bwd_configs(s)
            first += [("bwd", s, default)] + ([("old_bwd", s, None)] if old_dir else [])
            rest += [("bwd", s, c) for c in runs if c != default]
    first += [("check", c, None) for c in checks]
    tasks = first + rest
    workers = args.workers or max(1, min(14, (os.cpu_count() or 2) - 2))
    if smoke:
        workers = min(workers, 2)
    t0 = time.monotonic()
    try:
        errors = precompile([first, rest], old_dir, smoke, workers, t_start + 0.45 * args.deadline)
    except Exception:  # noqa: BLE001 - fall back to compiling on first use
        traceback.print_exc()
        errors = {"precompile": "failed; kernels compile on first use"}
    log(f"precompiled {len(tasks)} calls with {workers} workers in {time.monotonic() - t0:.1f} s; {len(errors)} failed")
    for t, e in errors.items():
        log(f"  failed: {t[:160]} -> {e[:200]}")

    report = dict(
        device=dev,
        torch=torch.__version__,
        triton=triton.__version__,
        old=old_dir,
        precompile_errors=errors,
        checks=[],
        entries=[],
    )

    def save():
        path = args.json or (os.path.join(os.environ["OUT"], "fa_tune.json") if os.environ.get("OUT") else None)
        if path:
            report["elapsed_s"] = time.monotonic() - t_start
            Path(path).write_text(json.dumps(report, indent=1, default=str))

    # 2. correctness on odd cases (default paths).
    log("\ncorrectness (max abs error vs float32 PyTorch on a few heads; SDPA's error as the yardstick):")
    for c in checks:
        try:
            check_case(c, report["checks"])
        except Exception as e:  # noqa: BLE001
            report["checks"].append(dict(shape=shape_name(c), error=f"{type(e).__name__}: {str(e)[:300]}"))
            log(f"  ERR {shape_name(c)}: {type(e).__name__}: {str(e)[:300]}")
    save()

    # 3. the sweep, shape by shape.
    # Each shape gets its share of the time left (a backward shape counts
    # double), so that a slow start still leaves every shape its SDPA, old and
    # default timings, which run first.
    weights = [1 if pid == 97 else 2 for pid, _ in shapes]
    for i, (pid, s) in enumerate(shapes):
        now = time.monotonic()
        share = now + (deadline - now) * weights[i] / sum(weights[i:])
        try:
            (sweep_fwd if pid == 97 else sweep_bwd)(s, share, report["entries"])
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            report["entries"].append(dict(problem=pid, shape=shape_name(s), error=f"{type(e).__name__}: {e}"[:300]))
        save()
    text = summary(report["entries"])
    bad = [c["shape"] for c in report["checks"] if not (c.get("fwd_ok") and c.get("bwd_ok"))]
    text += f"\ncorrectness cases: {len(report['checks']) - len(bad)}/{len(report['checks'])} ok" + (
        f"; NOT ok: {bad}" if bad else ""
    )
    text += f"\nelapsed {time.monotonic() - t_start:.0f} s"
    log(text)
    report["summary"] = text
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
