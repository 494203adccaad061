"""Hints: the likely cause of a wrong output, shown only when its signature matches.

A hint names a cause, so a wrong one misleads more than none. Each signature
is one small function over the evidence (:class:`Wrong`) that returns a
sentence when the evidence fits it and None otherwise; ``HINTS`` lists them in
the order they are tried, and the first that answers is shown. When none
answers, the report has no hint.

Two kinds of signature:

* **models**: the output recomputed, from the case's own inputs, the way a
  kernel with a given mistake computes it; the signature fits when the wrong
  output *is* that output (within the tolerance). Any problem: an input with
  a non-contiguous layout read as if it were contiguous. Per problem: the
  mistakes golden.py knows (its optional ``mistakes(*args)``, see
  docs/authors/golden.md): a masked tail loaded as 0.0, no max
  subtraction, the wrong softmax scale, a base-2 logsumexp, a missing D_i ...
* **patterns**: where the wrong elements are and what they hold: NaN in the
  last partial block, whole rows poisoned by the NaN padding of an input, NaN
  expected but a number returned, one constant factor, errors of
  low-precision arithmetic.

A hint never decides anything: a signature that fails (an exception, an input
too large to recompute) is skipped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

# Models recompute the answer: not for cases whose inputs hold more elements than this.
MODEL_LIMIT = 1 << 23
LN2, LOG2E = math.log(2.0), 1.0 / math.log(2.0)


@dataclass(frozen=True)
class Hint:
    """What a signature says: ``id`` names the signature (the function's name, or ``mistake:NAME`` for a
    problem's known mistake), ``text`` is what the student reads."""

    id: str
    text: str


@dataclass
class Case:
    """What a hint may know besides the output: the problem, the case's parameters and inputs."""

    problem: object = None
    params: dict = field(default_factory=dict)
    inputs: list | None = None  # as golden.make_inputs built them (kit.TensorInput or plain values), or tensors
    device: str = "cpu"  # where the judge computed its answers


@dataclass
class Wrong:
    """A wrong output: the evidence every signature looks at (float64 tensors on one device)."""

    name: str  # the output's name
    index: int  # its position among the problem's outputs
    got: torch.Tensor
    gold: torch.Tensor  # the float64 answer
    ref: torch.Tensor  # the answer in the output dtype (inf where it overflows), as float64
    allowed: torch.Tensor  # the tolerance per element
    bad: torch.Tensor  # which elements are wrong
    dtype: torch.dtype  # the output's dtype
    scope: str
    case: Case = field(default_factory=Case)

    @property
    def params(self) -> dict:
        return self.case.params or {}

    def matches(self, model: torch.Tensor) -> bool:
        """Is the output the model's (same NaN/inf, values within the tolerance), and the model wrong where it is?"""
        return matches(self.got, model, self.allowed, self.dtype, self.bad, self.ref)


def matches(got, model, allowed, dtype, bad, ref=None) -> bool:
    """Is ``got`` the model's output: NaN and inf in the same places, values within twice the tolerance (a
    kernel rounds differently from a float64 model, as a right one does from the answer)? And where ``got`` is
    wrong, is the model wrong too (farther from ``ref``, the answer, than the tolerance)?"""
    if not isinstance(model, torch.Tensor) or tuple(model.shape) != tuple(got.shape):
        return False
    m = model.detach().to(got.device)
    m = m.to(dtype).to(torch.float64) if dtype.is_floating_point else m.to(torch.float64)
    same_nonfinite = (torch.isnan(got) == torch.isnan(m)) & (torch.isinf(got) == torch.isinf(m))
    same_nonfinite &= ~(torch.isinf(got) & torch.isinf(m)) | (got == m)
    finite = torch.isfinite(got) & torch.isfinite(m)
    eps = torch.finfo(dtype).eps if dtype.is_floating_point else 0.0
    tol = 2 * allowed + 2 * eps * m.abs().nan_to_num(0.0, 0.0, 0.0)
    close = torch.where(finite, (got - m).abs() <= tol, same_nonfinite)
    # Every element the model explains (a kernel computes a few roundings differently: 1% may differ), and
    # nearly all of the wrong ones.
    if not (bool(close.float().mean() >= 0.99) and bool(close[bad].float().mean() >= 0.95)):
        return False
    if ref is None:
        return True
    both = torch.isfinite(m) & torch.isfinite(ref)
    model_wrong = torch.where(both, (m - ref).abs() > allowed, (m != ref) & ~(torch.isnan(m) & torch.isnan(ref)))
    return bool(model_wrong[bad].float().mean() >= 0.95)


# ---------------------------------------------------------------------- helpers


def _arg_names(problem) -> list[str]:
    sig = getattr(problem, "signature", "") or ""
    inner = sig[sig.find("(") + 1 : sig.find(")")] if "(" in sig else ""
    return [a.strip() for a in inner.split(",") if a.strip()]


def _values(inp):
    return getattr(inp, "values", inp)


def _numel(inputs) -> int:
    return sum(_values(a).numel() for a in inputs or [] if isinstance(_values(a), torch.Tensor))


def _args64(case: Case, replace: dict | None = None) -> list:
    """The case's arguments as golden() takes them (tensors in float64 on the judge's device)."""
    out = []
    for i, a in enumerate(case.inputs or []):
        v = (replace or {}).get(i, _values(a))
        out.append(
            v.to(case.device).to(torch.float64)
            if isinstance(v, torch.Tensor) and v.is_floating_point()
            else v.to(case.device)
            if isinstance(v, torch.Tensor)
            else v
        )
    return out


def _as_list(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


def _layout_of(inp) -> str | None:
    """How a kit.TensorInput sits in memory, in words; None when it is plainly contiguous."""
    order, pad, offset, step = (getattr(inp, k, None) for k in ("order", "pad", "offset", "step"))
    if order is None:
        return None
    parts = []
    if tuple(order) != tuple(range(len(order))):
        parts.append(f"dims stored in the order {tuple(order)}")
    if pad:
        parts.append(f"{pad} NaN after each row")
    if step and step != 1:
        parts.append(f"a step of {step} elements")
    if offset:
        parts.append(f"a storage offset of {offset}")
    return ", ".join(parts) or None


def _contiguous_reading(inp) -> torch.Tensor | None:
    """What a kernel that ignores the strides reads: the storage from the data pointer on, as a packed tensor."""
    storage = inp.storage()
    n = inp.values.numel()
    if storage.numel() < inp.offset + n:
        return None  # it would read past the storage: nothing to model
    return storage[inp.offset : inp.offset + n].reshape(inp.values.shape)


def _rows(x: torch.Tensor) -> torch.Tensor:
    return x.reshape(-1, x.shape[-1]) if x.dim() >= 1 else x.reshape(1, 1)


def _trailing(idx: list[int], n: int) -> int | None:
    """The start of ``idx`` when it is exactly a trailing range start..n-1, else None."""
    if not idx or idx[-1] != n - 1 or idx != list(range(idx[0], n)):
        return None
    return idx[0]


def _block_of(start: int) -> int:
    """The largest power of two (at most 4096) that ``start`` is a multiple of."""
    return min(start & -start, 4096) if start > 0 else 0


def _reduction_hint_dims(w: Wrong) -> str:
    p = w.params
    for key in ("K", "N", "n", "D", "d"):
        if isinstance(p.get(key), int) and p[key] > 1:
            return f"{key} = {p[key]}"
    return ""


# ---------------------------------------------------------------------- signatures


def nonfinite_expected(w: Wrong) -> str | None:
    """Every wrong element should be NaN or inf (as PyTorch gives), and a finite number came back."""
    exp_nf = ~torch.isfinite(w.ref[w.bad])
    got_f = torch.isfinite(w.got[w.bad])
    if not bool(exp_nf.all()) or not bool(got_f.all()):
        return None
    zeros = bool((w.got[w.bad] == 0).all())
    return (
        f"the expected output is NaN or inf at these elements (NaN or inf in the inputs, or a result too "
        f"large for {str(w.dtype).removeprefix('torch.')}), and the kernel returned "
        f"{'zeros' if zeros else 'finite numbers'}: NaN and inf must come through as PyTorch gives them "
        "(do not clamp, replace or skip them)"
    )


def known_mistake(w: Wrong) -> str | None:
    """A mistake the problem's golden.py models: the wrong output is exactly what that bug computes."""
    golden = getattr(w.case.problem, "golden", None)
    mistakes = getattr(golden, "mistakes", None)
    if mistakes is None or not w.case.inputs or _numel(w.case.inputs) > MODEL_LIMIT:
        return None
    with torch.no_grad():
        for name, text, outputs in mistakes(*_args64(w.case)):
            outputs = _as_list(outputs)
            if w.index < len(outputs) and outputs[w.index] is not None and w.matches(outputs[w.index]):
                return Hint(f"mistake:{name}", text)
    return None


def strides_as_contiguous(w: Wrong) -> str | None:
    """An input with another layout read as if it were packed (row-major, no gaps): right on contiguous inputs only."""
    case = w.case
    golden = getattr(getattr(case.problem, "golden", None), "golden", None)
    if golden is None or not case.inputs or _numel(case.inputs) > MODEL_LIMIT:
        return None
    laid = [(i, inp, _layout_of(inp)) for i, inp in enumerate(case.inputs) if hasattr(inp, "storage")]
    laid = [(i, inp, how) for i, inp, how in laid if how]
    if not laid:
        return None
    names = _arg_names(case.problem)
    tries = [[x] for x in laid] + ([laid] if len(laid) > 1 else [])
    with torch.no_grad():
        for which in tries:
            replace = {}
            for i, inp, _ in which:
                packed = _contiguous_reading(inp)
                if packed is None:
                    break
                replace[i] = packed
            else:
                outputs = _as_list(golden(*_args64(case, replace)))
                if w.index < len(outputs) and w.matches(outputs[w.index]):
                    said = "; ".join(
                        f"{names[i] if i < len(names) else f'argument {i + 1}'} ({how})" for i, _, how in which
                    )
                    layout = case.params.get("layout")
                    where = f' (layout "{layout}")' if layout else ""
                    return (
                        f"the output is what the kernel computes when it reads its inputs as if they were packed "
                        f"row-major, but this case's inputs{where} are laid out otherwise: {said}. Address "
                        "every tensor with its own strides (x.stride(0), x.stride(1), ...), never with "
                        "sizes"
                    )
    return None


def unwritten(w: Wrong) -> str | None:
    """NaN where finite values were expected, in exactly the trailing indices along one dimension (or everywhere):
    what a kernel leaves when its grid or its store mask stops short (new outputs start filled with NaN)."""
    nanbad = torch.isnan(w.got) & torch.isfinite(w.ref)
    if not bool(nanbad.any()):
        return None
    if bool(nanbad.all()):
        return (
            "every element is NaN, which is what new outputs start filled with: either the output was never "
            "written (a kernel that does not store, or stores into another tensor), or every value came out "
            "NaN (0 / 0, inf / inf)"
        )
    others = " (and other elements are wrong as well)" if bool((w.bad & ~nanbad).any()) else ""
    for d in reversed(range(nanbad.dim())):
        n = nanbad.shape[d]
        other = [i for i in range(nanbad.dim()) if i != d]
        start = _trailing((nanbad.any(dim=other) if other else nanbad).nonzero().flatten().tolist(), n)
        if start is None or start == 0:
            continue
        sl = [slice(None)] * nanbad.dim()
        sl[d] = slice(start, n)
        if not bool(nanbad[tuple(sl)].all()):
            continue
        what = (
            f"{_label(nanbad.dim(), d)} {start}-{n - 1} of {n} still hold"
            if start < n - 1
            else f"{_label(nanbad.dim(), d, one=True)} {start} (the last of {n}) still holds"
        )
        text = f"{what} NaN, which new outputs start filled with: never written"
        block = _block_of(start)
        if block >= 16 and n - start < block:
            return (
                f"{text}{others}. That is the last, partial block (from {start}, a multiple of {block}): the "
                f"grid or the loop over blocks stops before it ({n} // BLOCK where triton.cdiv({n}, BLOCK) "
                "is needed), or a mask cuts it off"
            )
        if block >= 16:
            return (
                f"{text}{others}. Everything from {start} (a multiple of {block}) on is missing: a block "
                "capped at that size needs a loop over the rest"
            )
        return f"{text}{others}: a grid that launches too few programs, or a store mask that stops short"
    return None


def _label(ndim: int, d: int, one: bool = False) -> str:
    if ndim == 1:
        return "element" if one else "elements"
    if d == ndim - 1:
        return "column" if one else "columns"
    if d == ndim - 2:
        return "row" if one else "rows"
    return f"index along dim {d}" if one else f"indices along dim {d}"


def last_block(w: Wrong) -> str | None:
    """Only the last, partial block along one dimension is wrong, with finite values: its lanes past the end."""
    bad = w.bad
    if bad.dim() < 1 or not bool(torch.isfinite(w.got[bad]).all()):
        return None
    for d in reversed(range(bad.dim())):
        n = bad.shape[d]
        other = [i for i in range(bad.dim()) if i != d]
        start = _trailing((bad.any(dim=other) if other else bad).nonzero().flatten().tolist(), n)
        if start is None or start == 0:
            continue
        block = _block_of(start)
        if block < 16 or n - start >= block:
            continue
        return (
            f"only the last, partial block is wrong: {_label(bad.dim(), d)} {start}-{n - 1} of {n}, from "
            f"{start} (a multiple of {block}) on. Look at what differs for that block: its mask (lanes past "
            "the end must not count), the other= value of its loads, or the offsets it loads with"
        )
    return None


def missing_mask(w: Wrong) -> str | None:
    """Every row came back NaN (the last may hold garbage instead: it reads past the storage), while an input
    has NaN in the gaps of its layout and none in its values: a load that reads past the end of each row."""
    if w.got.dim() < 2 or not w.case.inputs:
        return None
    rows_got, rows_ref = _rows(w.got), _rows(w.ref)
    nan_rows = torch.isnan(rows_got).all(dim=-1) & torch.isfinite(rows_ref).all(dim=-1)
    last_bad = bool(nan_rows[-1]) or bool(_rows(w.bad)[-1].any())
    if rows_got.shape[0] < 2 or not bool(nan_rows[:-1].all()) or not last_bad:
        return None
    gappy = [
        (i, inp)
        for i, inp in enumerate(w.case.inputs)
        if (getattr(inp, "pad", 0) or getattr(inp, "step", 1) != 1) and bool(torch.isfinite(_values(inp).float()).all())
    ]
    if not gappy:
        return None
    names = _arg_names(w.case.problem)
    which = ", ".join(names[i] if i < len(names) else f"argument {i + 1}" for i, _ in gappy)
    return (
        f"every row came back NaN while the inputs hold no NaN, and this case's {which} has NaN in the gaps "
        "after its rows (the judge fills them so): the kernel reads past the end of each row into the gap. "
        "Mask every load with the row's length (mask=offs < n), and other= the reduction's neutral value"
    )


def all_zeros(w: Wrong) -> str | None:
    """The whole output is zeros."""
    if not bool((w.got == 0).all()) or not bool((w.ref[w.bad] != 0).any()):
        return None
    top = float(w.ref[torch.isfinite(w.ref)].abs().max())
    if top < 6e-8:  # below float16's smallest subnormal
        return (
            f"the whole output is zeros where values were expected, and every expected value is tiny (at most "
            f"{top:.2g}): intermediates in float16 or bfloat16 underflow to 0 there. Compute in float32"
        )
    return (
        "the whole output is zeros where values were expected: nothing was computed into it (zeros "
        "stored, a loop that never ran, or a zero-filled tensor returned as it was)"
    )


def constant_factor(w: Wrong) -> str | None:
    """Every wrong element is the expected one times the same factor."""
    g, r = w.got[w.bad], w.ref[w.bad]
    if not bool(torch.isfinite(g).all()) or not bool(torch.isfinite(r).all()):
        return None
    ok = r.abs() > 1e-6 * max(float(w.ref[torch.isfinite(w.ref)].abs().max()), 1e-300)
    if int(ok.sum()) < 4 or int(ok.sum()) < 0.9 * g.numel():
        return None
    ratio = g[ok] / r[ok]
    med = float(ratio.median())
    if not math.isfinite(med) or med == 0 or float((ratio - med).abs().max()) > 1e-2 * abs(med) or abs(med - 1) < 0.05:
        return None
    text = f"every wrong element is the expected one times {med:.4g}"
    one_row = w.bad.dim() >= 2 and int(_rows(w.bad).any(dim=-1).sum()) < 2
    d = next((w.params[k] for k in ("D", "d") if isinstance(w.params.get(k), int)), None)
    for value, why in (
        (LOG2E, "log2(e): a natural logarithm or exponential taken in base 2 (or the other way)"),
        (LN2, "ln(2): a base-2 logarithm or exponential taken as a natural one (or the other way)"),
    ):
        if abs(med - value) < 2e-3 * value:
            return f"{text}, which is {why}"
    if d and d > 1:
        for value, why in ((math.sqrt(d), f"sqrt(d) = sqrt({d})"), (1 / math.sqrt(d), f"1/sqrt(d) = 1/sqrt({d})")):
            if abs(med - value) < 2e-3 * value:
                return f"{text}, which is {why}: the softmax scale is missing, or applied twice"
    return None if one_row else f"{text}: a constant factor is off"


def row_factor(w: Wrong) -> str | None:
    """Each wrong row is its expected row times a factor of its own: the row's normalization is off."""
    if w.got.dim() < 2 or w.scope != "row":
        return None
    bad_rows = _rows(w.bad).any(dim=-1)
    g, r = _rows(w.got)[bad_rows], _rows(w.ref)[bad_rows]
    if g.numel() == 0 or not bool(torch.isfinite(g).all()) or not bool(torch.isfinite(r).all()) or g.shape[-1] < 4:
        return None
    scale = r.abs().amax(dim=-1, keepdim=True)
    ok = r.abs() > 1e-3 * scale
    if not bool(ok.any(dim=-1).all()):
        return None
    ratio = torch.where(ok, g / torch.where(ok, r, torch.ones_like(r)), torch.full_like(r, float("nan")))
    med = ratio.nanmedian(dim=-1, keepdim=True).values
    spread = torch.where(ok, (ratio - med).abs(), torch.zeros_like(ratio)).amax(dim=-1)
    if not bool((spread <= 2e-3 * med.abs().squeeze(-1)).all()):
        return None
    lo, hi = float(med.min()), float(med.max())
    if max(abs(lo - 1), abs(hi - 1)) < 1e-3:
        return None
    which = "the wrong row is its expected row" if g.shape[0] == 1 else "each wrong row is its expected row"
    if hi == 0:
        return (
            f"{which.replace('is its expected row', 'is')} all zeros where values were expected: the factor "
            "that scales the row came out as 0 (for instance 1/sqrt(inf), from a sum of squares that "
            "overflowed in float16)"
        )
    factor = (
        f"a factor of its own (from {lo:.4g} to {hi:.4g})"
        if f"{lo:.3g}" != f"{hi:.3g}"
        else f"{lo:.4g}"
        if g.shape[0] == 1
        else f"about {lo:.4g}"
    )
    return (
        f"{which} times {factor}: within a row the values are right relative to each other, and only the "
        "row's overall scale is off (in a normalization: the row's sum, max or norm, or the statistics it "
        "comes from)"
    )


def low_precision(w: Wrong) -> str | None:
    """Close values (a few significant digits right) off by far more than the tolerance on many elements."""
    if w.scope == "element" or w.dtype not in (torch.float16, torch.bfloat16):
        return None  # no sum to accumulate, or an output precise enough that its own rounding is not the issue
    g, r, a = w.got[w.bad], w.ref[w.bad], w.allowed[w.bad]
    if g.numel() < 8 or not bool(torch.isfinite(g).all()) or not bool(torch.isfinite(r).all()):
        return None
    if w.bad.float().mean() < 0.05:
        return None
    mag = _rows(w.ref.abs()).amax(dim=-1, keepdim=True).expand_as(_rows(w.ref)).reshape(w.ref.shape)[w.bad]
    rel = (g - r).abs() / mag.clamp_min(1e-300)
    over = float(((g - r).abs() / a).max())
    if float(rel.max()) > 0.02 or over < 4 or float(rel.median()) < 2**-14:
        return None
    length = _reduction_hint_dims(w)
    return (
        f"the values are close (errors up to {float(rel.max()):.1e} of each row's scale) but up to {over:.0f}x "
        f"the tolerance on {float(w.bad.float().mean()):.0%} of the elements: the error of a sum accumulated in "
        f"low precision, which grows with the length of the sum{f' ({length})' if length else ''}. Accumulate "
        "in float32 (tl.zeros(..., dtype=tl.float32), .to(tl.float32) before reducing) and round once at the end"
    )


# The signatures, in the order they are tried: models before patterns, specific before general.
HINTS = [
    nonfinite_expected,
    known_mistake,
    strides_as_contiguous,
    unwritten,
    last_block,
    missing_mask,
    all_zeros,
    constant_factor,
    row_factor,
    low_precision,
]


def hint(w: Wrong) -> Hint | None:
    """The first signature that fits, or None when none does."""
    for signature in HINTS:
        try:
            said = signature(w)
        except Exception:  # noqa: BLE001 - a hint is advice: a signature that fails is skipped
            said = None
        if isinstance(said, Hint):
            return said
        if said:
            return Hint(signature.__name__, said)
    return None
