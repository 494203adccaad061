"""The speed section for people: a rich table, and a PNG plot when matplotlib is installed."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table


def _unit(seconds: list) -> tuple[str, float, int]:
    """One unit for a column of times (header and every cell agree): (name, scale, decimals)."""
    top = max((v for v in seconds if v), default=0.0)
    if top < 1e-2:
        return "µs", 1e6, 1
    if top < 10:
        return "ms", 1e3, 2
    return "s", 1.0, 3


def _time(seconds, scale: float, decimals: int) -> str:
    return "-" if seconds is None else f"{seconds * scale:,.{decimals}f}"


def _x(v) -> str:
    return "-" if v is None else f"{v:.3f}x"


def _shape(params: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items())


def _min_width(header: str, cells: list[str], wrap: bool) -> int:
    """The narrowest a column can be without cutting a word (wrap) or a cell (no wrap)."""
    heading = [header] if len(header) <= 12 else header.split()  # a short header stays on one line
    words = [w for text in [header, *cells] for w in text.split()] if wrap else heading + cells
    return max((len(w) for w in words), default=1)


def speed_columns(speed: dict) -> list[tuple[str, str, list[str], bool]]:
    """The speed table's columns: (header, justify, cells, may wrap)."""
    shapes = speed.get("shapes") or []
    unit, scale, decimals = _unit([t for r in shapes for t in (r.get("time_s"), r.get("profiler_time_s"))])
    ci_cells = []
    for row in shapes:
        lo, hi = row.get("ci") or [None, None]
        ci_cells.append(
            f"{row['speedup']:.3f}x [{lo:.3f}, {hi:.3f}]"
            if lo is not None and hi is not None
            else _x(row.get("speedup"))
        )
    return [
        ("shape", "left", [_shape(r["params"]) for r in shapes], True),
        (
            "mode",
            "left",
            [
                r["mode"]
                + (f" x{int(r.get('calls_per_sample') or 1)}" if int(r.get("calls_per_sample") or 1) > 1 else "")
                for r in shapes
            ],
            True,
        ),
        (f"time {unit}", "right", [_time(r["time_s"], scale, decimals) for r in shapes], False),
        (f"profiler {unit}", "right", [_time(r.get("profiler_time_s"), scale, decimals) for r in shapes], False),
        ("vs reference (95% CI)", "right", ci_cells, False),
        ("GB/s", "right", ["-" if not r.get("gbps") else f"{r['gbps']:,.0f}" for r in shapes], False),
        ("TFLOP/s", "right", ["-" if not r.get("tflops") else f"{r['tflops']:,.1f}" for r in shapes], False),
        (
            "% roofline",
            "right",
            ["-" if r.get("roofline_pct") is None else f"{r['roofline_pct']:.1f}%" for r in shapes],
            False,
        ),
        ("vs PyTorch", "right", [_x(r.get("vs_pytorch")) for r in shapes], False),
        ("ref vs PyTorch", "right", [_x(r.get("reference_vs_pytorch")) for r in shapes], False),
    ]


def _split(columns: list, width: int) -> list[list[tuple]]:
    """The columns in as few tables as fit ``width`` without cutting a word or a cell, each table led by the
    shape; each column with its width: (header, justify, cells, may wrap, width)."""
    gap = 2
    lead, rest = columns[0], columns[1:]
    groups, current = [], [lead]
    used = _min_width(lead[0], lead[2], lead[3])
    for col in rest:
        w = _min_width(col[0], col[2], col[3])
        if len(current) > 1 and used + gap + w > width:
            groups.append(current)
            current, used = [lead], _min_width(lead[0], lead[2], lead[3])
        current.append(col)
        used += gap + w
    groups.append(current)
    tables = []
    for cols in groups:
        widths = [_min_width(h, cells, wrap) for h, _j, cells, wrap in cols]
        slack = width - sum(widths) - gap * (len(cols) - 1)
        for i, (h, _j, cells, wrap) in enumerate(cols):  # the room left goes to the wrapping columns
            if wrap and slack > 0:
                natural = max(len(x) for x in [h, *cells])
                extra = min(slack, natural - widths[i])
                widths[i] += max(extra, 0)
                slack -= max(extra, 0)
        for i, (h, _j, _cells, _wrap) in enumerate(cols):  # then to headers, so they stay on one line
            extra = min(max(slack, 0), max(len(h) - widths[i], 0))
            widths[i] += extra
            slack -= extra
        tables.append([(*col, w) for col, w in zip(cols, widths)])
    return tables


def render_speed(speed: dict, console) -> None:
    shapes = speed.get("shapes") or []
    if not shapes:
        return
    cpu = speed.get("timing_mode", "").startswith("cpu")
    title = "speed (interpreter on the CPU: not a speed claim)" if cpu else "speed"
    parts = _split(speed_columns(speed), console.width)
    for i, columns in enumerate(parts):
        table = Table(
            title=title if i == 0 else None,
            title_justify="left",
            show_header=True,
            header_style="bold",
            box=None,
            pad_edge=False,
        )
        for header, justify, _cells, _wrap, width in columns:
            # Every cell fits its column's width; only a header (or the shape, or the mode) wraps, at spaces.
            table.add_column(header, justify=justify, overflow="fold", width=width)
        for r in range(len(shapes)):
            table.add_row(*(escape(cells[r]) for _h, _j, cells, _wrap, _width in columns))
        console.print(table)
    lo, hi = speed.get("ci", [0, 0])
    console.print(
        f"geometric mean: [bold]{speed['geomean_speedup']:.3f}x[/bold] the reference "
        f"(95% CI {lo:.3f}-{hi:.3f}, {speed['rounds']} rounds, stopped: {speed.get('stopped')})"
    )
    for k in speed.get("kernels") or []:
        warn = " [yellow]spills![/yellow]" if k.get("spills") else ""
        console.print(
            f"  kernel {escape(str(k['name']))}: {k.get('registers')} registers/thread, "
            f"{k.get('spills')} spills, {k.get('shared_bytes')} B shared, "
            f"{k.get('num_warps')} warps, {k.get('num_stages')} stages{warn}"
        )
    ceil = speed.get("ceilings") or {}
    if ceil:
        rates = ceil.get("matmul_flops_per_s", {})
        console.print(
            f"[dim]ceilings of {escape(str(ceil.get('key', {}).get('name', 'this GPU')))}: copy "
            f"{ceil.get('copy_bytes_per_s', 0) / 1e9:,.0f} GB/s; matmul "
            + ", ".join(f"{k} {v / 1e12:,.0f}" for k, v in rates.items())
            + " TFLOP/s[/dim]"
        )
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
        return "no plot: matplotlib is not installed (pip install -e '.[plot]', or '.[dev]')"
    shapes = speed.get("shapes") or []
    if not shapes:
        return "no plot: nothing was timed"
    labels = [_shape(r["params"]).replace(" ", "\n") for r in shapes]
    xs = range(len(shapes))
    fig, axes = plt.subplots(1, 2, figsize=(max(8, 2.2 * len(shapes)), 4.5))
    ax = axes[0]
    sp = [r.get("speedup") or 0 for r in shapes]
    cis = [
        r.get("ci") if r.get("ci") and None not in r["ci"] and r.get("speedup") else [s, s] for r, s in zip(shapes, sp)
    ]
    err = [[s - ci[0] for s, ci in zip(sp, cis)], [ci[1] - s for s, ci in zip(sp, cis)]]
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
    fig.suptitle(f"geometric mean {speed.get('geomean_speedup') or 0:.3f}x the reference")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return f"plot written to {path}"
