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

from judge import hints
from judge.shared.oom import out_of_memory


@dataclass
class Mismatch:
    output: str
    message: str  # one line for the verdict
    pattern: str = ""  # where the wrong elements are
    hint: str = ""  # the likely cause, when a signature of judge.hints fits
    hint_id: str = ""  # which signature (judge.hints.Hint.id)
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


def tolerance(
    gold: torch.Tensor,
    naive: torch.Tensor,
    dtype: torch.dtype,
    scope: str,
    check: dict,
    representable: torch.Tensor | None = None,
) -> torch.Tensor:
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


def _kinds(got: torch.Tensor, ref: torch.Tensor, value_bad: torch.Tensor, err: torch.Tensor) -> list[str]:
    """What the wrong elements are, by kind: NaN or inf where numbers were expected (no error size can describe
    those), numbers where NaN/inf was expected, and values outside the tolerance with the largest error."""
    fin_ref, fin_got = torch.isfinite(ref), torch.isfinite(got)
    nan_got, inf_got = torch.isnan(got), torch.isinf(got)
    parts = []
    for n, text in (
        (int((fin_ref & nan_got).sum()), "NaN where finite values were expected"),
        (int((fin_ref & inf_got).sum()), "inf where finite values were expected"),
        (int((~fin_ref & fin_got).sum()), "finite values where NaN/inf was expected"),
        (
            int((~fin_ref & ~fin_got & ((torch.isnan(ref) != nan_got) | (inf_got & (ref != got)))).sum()),
            "NaN/inf of the wrong kind (NaN for inf, or the wrong sign)",
        ),
    ):
        if n:
            parts.append(f"{n} {text}")
    if bool(value_bad.any()):
        parts.append(
            f"{int(value_bad.sum())} values outside the tolerance (largest error {float(err[value_bad].max()):.3g})"
        )
    return parts


def compare(
    name: str,
    got: torch.Tensor,
    gold: torch.Tensor,
    naive: torch.Tensor,
    dtype: torch.dtype,
    scope: str,
    check: dict,
    dim_names=None,
    case: hints.Case | None = None,
    index: int = 0,
) -> Mismatch | None:
    """None if ``got`` is right; otherwise what is wrong and where.

    ``case`` (the problem, the case's parameters and inputs) and ``index`` (the
    output's position) let judge.hints recompute known mistakes; without them
    only the hints read from the pattern of wrong elements can answer.

    On the GPU the comparison's float64 copies are the judge's memory on a device that other jobs share: where
    it has no room for them, the same comparison runs on the CPU (as judge.expected does for the answers). Else
    a crowded GPU ends jobs in an internal error here ("Tried to allocate 512.00 MiB"), or in Hypothesis's
    "unreliable results" when the next try finds room.
    """
    args = (scope, check, dim_names, case, index)
    try:
        return _compare(name, got, gold, naive, dtype, *args)
    except Exception as exc:  # noqa: BLE001 - only an out-of-memory on the GPU goes to the CPU
        if gold.device.type == "cpu" or not out_of_memory(exc):
            raise
        torch.cuda.empty_cache()
    return _compare(name, got.cpu(), gold.cpu(), naive.cpu(), dtype, *args)


def _compare(
    name: str,
    got: torch.Tensor,
    gold: torch.Tensor,
    naive: torch.Tensor,
    dtype: torch.dtype,
    scope: str,
    check: dict,
    dim_names,
    case: hints.Case | None,
    index: int,
) -> Mismatch | None:
    # Moved first, widened there: an output arrives on the CPU (from the wire) in its own dtype, and widened
    # on the CPU a large fp16 one becomes 4x the bytes to move after most of a second of one core's work (16384 x
    # 4096, softmax's first bench shape: the cores a GPU host's other jobs need); on the GPU both are free.
    # The values are the same either way (widening to float64 is exact).
    got64 = got.to(gold.device).to(torch.float64)
    gold = gold.to(torch.float64)
    naive64 = naive.to(gold.device).to(torch.float64)
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
        samples.append((idx, float(got64.flatten()[flat]), float(ref.flatten()[flat]), float(allowed.flatten()[flat])))
    message = f"{name}: {n_bad} of {total} elements wrong: " + "; ".join(_kinds(got64, ref, value_bad, err))
    said = hints.hint(hints.Wrong(name, index, got64, gold, ref, allowed, bad, dtype, scope, case or hints.Case()))
    return Mismatch(
        output=name,
        message=message,
        pattern=describe_pattern(bad, dim_names),
        hint=said.text if said else "",
        hint_id=said.id if said else "",
        samples=samples,
        bad=n_bad,
        total=total,
    )
