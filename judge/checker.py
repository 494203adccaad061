"""Is an output right? Compared with the float64 golden answer, tolerance set by the naive one.

The rule is FlashAttention's: the submission's error may be at most ``factor``
times the error a straightforward same-precision PyTorch implementation makes
(the problem's ``naive``), pooled over a row (or the element, or the tensor),
plus a floor of a few units in the last place of the output dtype. So the
tolerance adapts to dtype, shape and values by itself: a reduction over 4096
fp16 numbers may be off by more than one over 4, and a float32 add by nothing.

NaN and infinity must sit exactly where the golden answer has them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass
class Mismatch:
    output: str
    message: str  # one line for the verdict
    pattern: str = ""  # where the wrong elements are
    hint: str = ""  # the likely cause, when the pattern says something
    samples: list = field(default_factory=list)  # (index, got, expected, allowed)
    bad: int = 0
    total: int = 0


def pooled(err: torch.Tensor, scope: str) -> torch.Tensor:
    if scope == "element" or err.dim() == 0:
        return err
    if scope == "row":
        return err.amax(dim=-1, keepdim=True)
    if scope == "tensor":
        return err.amax()
    raise ValueError(f"unknown scope {scope!r}")


def tolerance(gold: torch.Tensor, naive: torch.Tensor, dtype: torch.dtype, scope: str, check: dict,
              representable: torch.Tensor | None = None) -> torch.Tensor:
    """Allowed absolute error per element (gold and naive in float64).

    ``representable`` marks where the answer is finite in the output dtype;
    elsewhere the naive error does not count (it is checked as NaN/inf).
    """
    finfo = torch.finfo(dtype)
    factor = float(check.get("factor", 2.0))
    ulps = float(check.get("ulps", 2.0))
    atol = float(check.get("atol", 2 * finfo.eps * finfo.tiny))
    finite = torch.isfinite(gold) if representable is None else representable
    err_naive = torch.where(finite, (naive - gold).abs(), torch.zeros_like(gold))
    if not torch.isfinite(err_naive).all():
        raise ValueError("the naive model is not finite where the answer is representable")
    return factor * pooled(err_naive, scope) + ulps * finfo.eps * gold.abs().nan_to_num(0.0, 0.0, 0.0) + atol


def _ranges(indices: list[int]) -> str:
    out, start, prev = [], None, None
    for i in indices:
        if start is None:
            start = prev = i
        elif i == prev + 1:
            prev = i
        else:
            out.append((start, prev))
            start = prev = i
    if start is not None:
        out.append((start, prev))
    text = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in out[:6])
    if len(out) > 6:
        text += f", ... ({len(out)} runs)"
    return text


def describe_pattern(bad: torch.Tensor, names=None) -> str:
    """Which indices along each dimension hold wrong elements."""
    if bad.dim() == 0:
        return "the scalar"
    shape = list(bad.shape)
    names = names or {1: ["elements"], 2: ["rows", "cols"]}.get(bad.dim(), [f"dim {d}" for d in range(bad.dim())])
    parts = []
    for d in range(bad.dim()):
        other = [i for i in range(bad.dim()) if i != d]
        hit = bad.any(dim=other) if other else bad
        idx = hit.nonzero().flatten().tolist()
        label = names[d] if d < len(names) else f"dim {d}"
        if len(idx) == shape[d]:
            parts.append(f"all {label} (0-{shape[d] - 1})" if shape[d] > 1 else f"{label} 0")
        else:
            parts.append(f"{label} {_ranges(idx)} of {shape[d]}")
    return "; ".join(parts)


def _hint(got: torch.Tensor, gold: torch.Tensor, bad: torch.Tensor) -> str:
    g, r = got[bad], gold[bad]
    if torch.isnan(g).all() and torch.isfinite(r).all():
        return ("NaN where a value was expected: outputs start out filled with NaN, so these elements were "
                "probably never written (a mask or grid that misses them), or NaN padding was read")
    if (g == 0).all() and (r != 0).any():
        return "zeros where values were expected: these elements were probably never computed"
    if bad.dim() >= 1 and bad.shape[-1] > 1:
        cols = bad.reshape(-1, bad.shape[-1]).any(dim=0).nonzero().flatten()
        n = bad.shape[-1]
        if (len(cols) and int(cols.min()) > 0 and int(cols.max()) == n - 1 and len(cols) == n - int(cols.min())
                and len(cols) <= n // 2):
            where = "of each row " if bad.dim() > 1 else ""
            return f"only the last {len(cols)} elements {where}are wrong: check the tail of the last dimension"
    ok = torch.isfinite(g) & torch.isfinite(r) & (r.abs() > 1e-6)
    if ok.sum() >= 4:
        ratio = g[ok] / r[ok]
        med = ratio.median()
        if (ratio - med).abs().max() < 1e-2 * med.abs() and abs(float(med) - 1) > 0.05:
            return f"every wrong element is the expected one times {float(med):.4g}: a scale factor is off"
    return ""


def compare(name: str, got: torch.Tensor, gold: torch.Tensor, naive: torch.Tensor, dtype: torch.dtype,
            scope: str, check: dict, dim_names=None) -> Mismatch | None:
    """None if ``got`` is right; otherwise what is wrong and where."""
    got64 = got.to(torch.float64).to(gold.device)
    gold = gold.to(torch.float64)
    naive64 = naive.to(torch.float64).to(gold.device)
    total = gold.numel()

    # What the right answer is in the output dtype: a sum that overflows fp16
    # must be inf there, even though float64 holds it.
    ref = gold.to(dtype).to(torch.float64)
    nan_ref, nan_got = torch.isnan(ref), torch.isnan(got64)
    inf_ref, inf_got = torch.isinf(ref), torch.isinf(got64)
    nonfinite_bad = (nan_ref != nan_got) | (inf_ref != inf_got) | (inf_ref & inf_got & (ref != got64))

    representable = torch.isfinite(ref)
    finite = representable & torch.isfinite(got64)
    allowed = tolerance(gold, naive64, dtype, scope, check, representable)
    err = torch.where(finite, (got64 - gold).abs(), torch.zeros_like(gold))
    value_bad = finite & (err > allowed)
    bad = nonfinite_bad | value_bad
    n_bad = int(bad.sum())
    if n_bad == 0:
        return None

    flat_bad = bad.flatten().nonzero().flatten()
    # Show the worst elements first (by how far past the allowance they are).
    excess = torch.where(value_bad, err / allowed.clamp_min(1e-300), torch.zeros_like(err)).flatten()
    excess = torch.where(nonfinite_bad.flatten(), torch.full_like(excess, float("inf")), excess)
    order = flat_bad[torch.argsort(excess[flat_bad], descending=True, stable=True)][:5]
    samples = []
    for flat in order.tolist():
        idx = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), gold.shape)) if gold.dim() else ()
        samples.append((idx, float(got64.flatten()[flat]), float(ref.flatten()[flat]),
                        float(allowed.flatten()[flat])))
    if bool(nonfinite_bad.any()) and not bool(value_bad.any()):
        what = "non-finite values (NaN/inf) where the expected output differs"
    elif bool(nonfinite_bad.any()):
        what = "wrong values and misplaced NaN/inf"
    else:
        what = "values outside the tolerance"
    worst = float(err[value_bad].max()) if bool(value_bad.any()) else float("nan")
    message = f"{name}: {n_bad} of {total} elements wrong ({what})"
    if worst == worst:
        message += f"; largest error {worst:.3g}"
    return Mismatch(
        output=name,
        message=message,
        pattern=describe_pattern(bad, dim_names),
        hint=_hint(got64, ref, bad),
        samples=samples,
        bad=n_bad,
        total=total,
    )
