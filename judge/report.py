"""Rendering a Report: a rich terminal view for people, JSON for programs."""

from __future__ import annotations

import json
import math

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from judge.verdicts import Report, Verdict

STYLE = {Verdict.AC: "bold green", Verdict.IE: "bold magenta"}


def to_json(report: Report) -> str:
    return json.dumps(finite_json(report.to_json()), indent=2, allow_nan=False)


def finite_json(x):
    """JSON has no NaN or infinity: such floats become the strings "nan", "inf", "-inf"."""
    if isinstance(x, float):
        return x if math.isfinite(x) else repr(x)
    if isinstance(x, dict):
        return {str(k): finite_json(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [finite_json(v) for v in x]
    if x is None or isinstance(x, (str, int, bool)):
        return x
    return str(x)


def _clean(text: str, limit: int = 2000) -> str:
    """Text that came from the worker: no control characters, bounded, escaped for rich."""
    text = "".join(ch if ch in "\n\t" or ch.isprintable() else "?" for ch in str(text))
    if len(text) > limit:
        text = text[:limit] + " [...]"
    return escape(text)


def render(report: Report, console: Console) -> None:
    p = report.problem
    mode = report.mode
    where = (
        "Triton interpreter on the CPU"
        if mode["interpret"] and mode["device"] == "cpu"
        else (f"Triton interpreter, tensors on {mode['device']}" if mode["interpret"] else "GPU (compiled Triton)")
    )
    device_name = report.worker.get("device_name")
    if device_name and not mode["interpret"]:
        where += f": {device_name}"
    answers = mode.get("kind") == "answers"
    console.print(f"[bold]Problem {p['id']} · {escape(p['title'])}[/bold]   {escape(report.submission['path'])}")
    if answers:
        console.print("[dim]answers read as data and checked part by part (nothing in the file runs)[/dim]")
    else:
        console.print(
            f"[dim]mode: {where} · sandbox {mode['sandbox']} · seed {report.seed}"
            f"{' · quick test' if mode.get('quick') else ''}[/dim]"
        )

    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    table.add_column("")
    table.add_column("part" if answers else "group")
    table.add_column("cases", justify="right")
    table.add_column("points", justify="right")
    table.add_column("")
    for g in report.groups:
        if g.passed:
            mark, note = "[green]✓[/green]", ""
        elif g.skipped:
            mark, note = "[dim]–[/dim]", "[dim]not run[/dim]"
        else:
            mark, note = "[red]✗[/red]", f"[red]{g.verdict.value}[/red]"
        table.add_row(mark, escape(g.name), str(g.cases_run), f"{g.earned:g}/{g.points:g}", note)
    console.print(table)

    for f in (report.details.get("findings") or [])[:8]:
        console.print(f"    line {f['line']}: {escape(f['code'])} - {escape(f['why'])}")
    for f in ((report.details.get("error") or {}).get("frames") or [])[-3:]:
        console.print(f"    line {f['line']} in {escape(f['function'])}: {_clean(f['code'], 200)}")
    for same in _same_failures(report.groups):
        g = same[0]
        if len(same) == 1:
            console.print(f"\n[bold red]✗ {escape(g.name)}[/bold red] [dim]({escape(g.about)})[/dim]")
        else:
            names = ", ".join(x.name for x in same)
            console.print(
                f"\n[bold red]✗ {escape(names)}[/bold red] [dim](the same failure in {len(same)} "
                f"groups; the first one's case)[/dim]"
            )
        console.print(f"  {g.verdict.value}: {_clean(g.message)}")
        if g.case is not None:
            console.print(f"  case: [cyan]{escape(json.dumps(g.case))}[/cyan]")
        d = g.details or {}
        if d.get("pattern"):
            console.print(f"  wrong at: {escape(d['pattern'])}")
        if d.get("hint"):
            console.print(f"  hint: {escape(d['hint'])}")
        for s in (d.get("samples") or [])[:3]:
            console.print(
                f"    {d.get('output', 'out')}{escape(str(list(s['index'])))}: got {s['got']:.6g}, "
                f"expected {s['expected']:.6g} (allowed error {s['allowed_error']:.2g})"
            )
        err = d.get("error") or {}
        for f in (err.get("frames") or [])[-3:]:
            console.print(f"    line {f['line']} in {escape(f['function'])}: {_clean(f['code'], 200)}")
        if g.repro:
            console.print(f"  reproduce: [dim]{escape(g.repro)}[/dim]")
        saved = d.get("saved_case")
        if saved:
            console.print(f"  saved case: {escape(saved['path'])}; load it with:")
            for line in saved["loader"].splitlines():
                console.print(f"    [cyan]{escape(line)}[/cyan]")

    if report.output.strip():
        console.print("\n[bold]printed by the submission[/bold] [dim](truncated)[/dim]")
        console.print(_clean(report.output[-1500:], 1500))
    for note in report.notes:
        console.print(f"[yellow]note:[/yellow] {escape(note)}")
    speed = report.speed
    if speed.get("shapes"):
        from judge.timing.render import render_speed

        console.print()
        render_speed(speed, console)
    if answers:
        pass  # no speed part
    elif not speed.get("scored"):
        console.print(f"[dim]speed ({speed.get('max_points', 0):g} points): {escape(speed.get('reason', ''))}[/dim]")
    else:
        console.print(
            f"speed: {speed.get('points', 0):g} / {speed.get('max_points', 0):g} points - "
            f"{_clean(speed.get('reason', ''), 400)}"
        )

    style = STYLE.get(report.verdict, "bold red")
    console.print(
        f"\n[{style}]{report.verdict.value}[/{style}] {report.verdict.meaning} — {_clean(report.message, 400)}"
    )
    correctness = report.score - report.speed_points
    if answers:
        right = sum(g.passed for g in report.groups)
        console.print(
            f"[bold]score {report.score:g} / {report.attainable_score:g}[/bold] "
            f"[dim]({right} of {len(report.groups)} parts right)[/dim]"
        )
        return
    speed_part = (
        f"speed {report.speed_points:g} of {speed.get('max_points', 0):g}"
        if report.speed_measurable
        else escape(report.max_score_note)
        if report.max_score_note
        else "no speed points"
    )
    console.print(
        f"[bold]score {report.score:g} / {report.attainable_score:g}[/bold] "
        f"[dim](correctness {correctness:g} of {report.correctness_points:g}; {speed_part}; "
        f"{report.elapsed_seconds:.1f} s)[/dim]"
    )


def _same_failures(groups) -> list[list]:
    """The failed groups, those with an identical failure (verdict, message, details) together, in order.

    The case and its reproduce line differ from group to group and are not compared: a failure that does not
    depend on the case (an error at import, a missing entry point) is printed once, for every group it hit.
    """
    out: dict = {}
    for g in groups:
        if g.passed or g.skipped:
            continue
        key = (g.verdict.value, g.message, json.dumps(g.details or {}, sort_keys=True, default=str))
        if g.case is not None and (g.details or {}).get("samples"):
            key += (g.name,)  # wrong values are about their own case
        out.setdefault(key, []).append(g)
    return list(out.values())
