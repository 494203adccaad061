"""The speed section for people: a rich table, and a PNG plot when matplotlib is installed."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table


def _us(seconds) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1e6:,.1f}" if seconds < 1e-2 else f"{seconds * 1e3:,.2f} ms"


def _x(v) -> str:
    return "-" if v is None else f"{v:.3f}x"


def _shape(params: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items())


def render_speed(speed: dict, console) -> None:
    shapes = speed.get("shapes") or []
    if not shapes:
        return
    cpu = speed.get("timing_mode", "").startswith("cpu")
    title = "speed (interpreter on the CPU: not a speed claim)" if cpu else "speed"
    table = Table(title=title, title_justify="left", show_header=True, header_style="bold", box=None,
                  pad_edge=False)
    for col, just in (("shape", "left"), ("mode", "left"), ("time us", "right"), ("profiler us", "right"),
                      ("GB/s", "right"),
                      ("TFLOP/s", "right"), ("% roofline", "right"), ("vs reference (95% CI)", "right"),
                      ("vs PyTorch", "right"), ("ref vs PyTorch", "right")):
        table.add_column(col, justify=just)
    for row in shapes:
        ci = row.get("ci") or [None, None]
        lo, hi = ci
        ci_text = f"{row['speedup']:.3f}x [{lo:.3f}, {hi:.3f}]" if lo is not None and hi is not None else _x(
            row.get("speedup"))
        k = int(row.get("calls_per_sample") or 1)
        mode = row["mode"] + (f" x{k}" if k > 1 else "")
        table.add_row(escape(_shape(row["params"])), mode, _us(row["time_s"]), _us(row.get("profiler_time_s")),
                      "-" if not row.get("gbps") else f"{row['gbps']:,.0f}",
                      "-" if not row.get("tflops") else f"{row['tflops']:,.1f}",
                      "-" if row.get("roofline_pct") is None else f"{row['roofline_pct']:.1f}%",
                      ci_text, _x(row.get("vs_pytorch")), _x(row.get("reference_vs_pytorch")))
    console.print(table)
    lo, hi = speed.get("ci", [0, 0])
    console.print(f"geometric mean: [bold]{speed['geomean_speedup']:.3f}x[/bold] the reference "
                  f"(95% CI {lo:.3f}-{hi:.3f}, {speed['rounds']} rounds, stopped: {speed.get('stopped')})")
    for k in speed.get("kernels") or []:
        warn = " [yellow]spills![/yellow]" if k.get("spills") else ""
        console.print(f"  kernel {escape(str(k['name']))}: {k.get('registers')} registers/thread, "
                      f"{k.get('spills')} spills, {k.get('shared_bytes')} B shared, "
                      f"{k.get('num_warps')} warps, {k.get('num_stages')} stages{warn}")
    ceil = speed.get("ceilings") or {}
    if ceil:
        rates = ceil.get("matmul_flops_per_s", {})
        console.print(f"[dim]ceilings of {escape(str(ceil.get('key', {}).get('name', 'this GPU')))}: copy "
                      f"{ceil.get('copy_bytes_per_s', 0) / 1e9:,.0f} GB/s; matmul "
                      + ", ".join(f"{k} {v / 1e12:,.0f}" for k, v in rates.items()) + " TFLOP/s[/dim]")
    for note in speed.get("notes") or []:
        console.print(f"[yellow]speed note:[/yellow] {escape(note)}")


def plot(speed: dict, path) -> str:
    """Write a PNG of the per-shape speedups (vs the reference and PyTorch) and roofline fractions.

    Returns a one-line note saying where it went, or why there is none.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "no plot: matplotlib is not installed (pip install matplotlib)"
    shapes = speed.get("shapes") or []
    if not shapes:
        return "no plot: nothing was timed"
    labels = [_shape(r["params"]).replace(" ", "\n") for r in shapes]
    xs = range(len(shapes))
    fig, axes = plt.subplots(1, 2, figsize=(max(8, 2.2 * len(shapes)), 4.5))
    ax = axes[0]
    sp = [r["speedup"] for r in shapes]
    err = [[r["speedup"] - r["ci"][0] for r in shapes], [r["ci"][1] - r["speedup"] for r in shapes]]
    width = 0.4
    ax.bar([x - width / 2 for x in xs], sp, width, yerr=err, capsize=3, label="vs reference")
    vt = [r.get("vs_pytorch") or 0 for r in shapes]
    ax.bar([x + width / 2 for x in xs], vt, width, label="vs PyTorch")
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xticks(list(xs), labels, fontsize=7)
    ax.set_ylabel("speedup (higher is faster)")
    ax.legend(fontsize=8)
    ax = axes[1]
    roof = [r.get("roofline_pct") or 0 for r in shapes]
    ref_roof = [r.get("reference_roofline_pct") or 0 for r in shapes]
    ax.bar([x - width / 2 for x in xs], roof, width, label="submission")
    ax.bar([x + width / 2 for x in xs], ref_roof, width, label="reference")
    ax.axhline(100, color="grey", linewidth=0.8)
    ax.set_xticks(list(xs), labels, fontsize=7)
    ax.set_ylabel("% of measured roofline")
    ax.legend(fontsize=8)
    fig.suptitle(f"geometric mean {speed['geomean_speedup']:.3f}x the reference")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return f"plot written to {path}"
