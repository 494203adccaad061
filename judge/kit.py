"""Helpers for problem authors: what a problem's golden.py builds inputs with.

``make_inputs(params, gen)`` returns a list with one entry per positional
argument of the entry point: a :class:`TensorInput` for a tensor, or a plain
Python value (float, bool, None) for a scalar. A TensorInput holds the logical
values in the target dtype plus how they are laid out in memory; the judge
builds that layout (padding filled with NaN, so reading it shows up) and the
worker receives exactly those bytes.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass

import torch

from judge.shared.oom import out_of_memory


@dataclass
class TensorInput:
    values: torch.Tensor  # logical values, already in the target dtype, on the CPU
    order: tuple | None = None  # storage order of the dims, outermost first; None = row-major
    pad: int = 0  # extra elements after each run of the innermost stored dim
    offset: int = 0  # storage offset of the first element
    step: int = 1  # every stride multiplied by this (step 2 = every other element)

    def __post_init__(self):
        self.values = self.values.detach().to("cpu").contiguous()
        nd = self.values.dim()
        if self.order is None:
            self.order = tuple(range(nd))
        self.order = tuple(int(d) for d in self.order)
        if sorted(self.order) != list(range(nd)):
            raise ValueError(f"order {self.order} is not a permutation of {nd} dims")

    @property
    def dtype(self) -> torch.dtype:
        return self.values.dtype

    def strides(self) -> list[int]:
        shape = self.values.shape
        strides = [0] * len(shape)
        step = 1
        for i, d in enumerate(reversed(self.order)):
            strides[d] = step
            step *= shape[d] + (self.pad if i == 0 else 0)
        return [s * self.step for s in strides]

    def storage_numel(self) -> int:
        shape = self.values.shape
        if any(s == 0 for s in shape):
            return self.offset
        return self.offset + 1 + sum((s - 1) * st for s, st in zip(shape, self.strides()))

    def storage(self) -> torch.Tensor:
        """The full storage: values in their layout, every gap NaN (or -1 for integers)."""
        fill = float("nan") if self.dtype.is_floating_point else -1
        storage = torch.full((self.storage_numel(),), fill, dtype=self.dtype)
        view = torch.as_strided(storage, self.values.shape, self.strides(), self.offset)
        view.copy_(self.values)
        return storage


_where = threading.local()  # the device the judge computes its answers on, per thread (computing_on)


@contextlib.contextmanager
def computing_on(device: str):
    """The judge's own work in this block may use ``device`` (its golden device) through :func:`heavy`."""
    before = getattr(_where, "device", "cpu")
    _where.device = str(device)
    try:
        yield
    finally:
        _where.device = before


def heavy(fn, *tensors):
    """``fn(*tensors)`` where the judge computes its answers (a GPU when it has one; see computing_on),
    with its tensor results brought back to the CPU; on the CPU after an out-of-memory on the GPU (which
    a submission's memory use may cause), as judge.expected does.

    For the float64 work inside make_inputs (98's forward pass, O(n^2) per head): the values are drawn on
    the CPU from the case's generator either way, and float64 results rounded to the case's dtype are the
    same on either device. On a CPU the forward of one 2 x 8 x 4096 case takes seconds.
    """
    device = getattr(_where, "device", "cpu")
    if device != "cpu":
        try:
            out = fn(*(t.to(device) for t in tensors))
            return tuple(o.cpu() for o in out) if isinstance(out, tuple) else out.cpu()
        except Exception as exc:  # noqa: BLE001 - only an out-of-memory goes to the CPU
            if not out_of_memory(exc):
                raise
            torch.cuda.empty_cache()
    return fn(*tensors)


RELEASE_ABOVE = 1 << 30  # cached GPU bytes a process keeps past a computation (release_cached)


def release_after_case() -> None:
    """After each case of the test groups (judge.session): :func:`release_cached`, so that what a judge's largest
    case cached is not kept from the other judges sharing the GPU: without it, accepted files failed beside
    judges that each held gigabytes of cached blocks. It costs a case the allocator's memory asked of the
    driver again."""
    if not (torch.cuda.is_available() and torch.cuda.is_initialized()):
        return
    try:
        release_cached()
    except Exception:  # noqa: BLE001 - a release is a courtesy to the other jobs: never the case's error
        pass


def release_cached(above: int = RELEASE_ABOVE) -> None:
    """Give the device back what this process's CUDA allocator keeps cached beyond ``above`` bytes.

    PyTorch keeps freed blocks for the next allocation. A judge alone on its GPU loses nothing by that, but
    in ``judge grade --jobs 12`` every job's process would keep the peak of its largest computation (a bench
    shape's float64 golden answer: gigabytes) while the other jobs' cases and speed runs run out of memory
    (docs/measurements: grading throughput). Called after the bench-sized work (the speed run's output
    checks, the replays of timed calls) and after each case of the test groups (judge.session), whose
    largest softmax cases keep gigabytes a judge too."""
    if torch.cuda.is_available() and torch.cuda.is_initialized() and torch.cuda.memory_reserved() > above:
        torch.cuda.empty_cache()


def generator(seed: int) -> torch.Generator:
    return torch.Generator(device="cpu").manual_seed(int(seed) & ((1 << 63) - 1))


def normal(shape, gen: torch.Generator, dtype: torch.dtype, std: float = 1.0, mean: float = 0.0) -> torch.Tensor:
    """Normal samples drawn in float32 on the CPU, then rounded to ``dtype``."""
    x = torch.randn(tuple(shape), generator=gen, dtype=torch.float32) * std + mean
    return x.to(dtype)


def uniform(shape, gen: torch.Generator, dtype: torch.dtype, low: float = -1.0, high: float = 1.0) -> torch.Tensor:
    x = torch.rand(tuple(shape), generator=gen, dtype=torch.float32) * (high - low) + low
    return x.to(dtype)


def dtype_of(name: str) -> torch.dtype:
    return getattr(torch, name)


def round_to(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Round a float tensor to ``dtype`` and back to float32: one rounding step."""
    return x.to(dtype).to(torch.float32)


def truncate_tf32(x: torch.Tensor) -> torch.Tensor:
    """float32 -> TF32 by dropping the 13 low mantissa bits (towards zero).

    That is what the tensor cores do with float32 operands of ``tl.dot`` on
    Hopper (seen with Triton 3.6: 1 + 3*2^-12 multiplies as 1.0, where rounding
    to nearest would give 1 + 2^-10). Truncation errs more than rounding and
    always towards zero, so a naive model built on it keeps a correct TF32
    kernel inside the tolerance, and a kernel that rounds better passes too.
    """
    bits = x.contiguous().view(torch.int32)
    out = (bits & ~0x1FFF).view(torch.float32)
    return torch.where(torch.isfinite(x), out, x)


def layout(name: str, ndim: int) -> tuple[tuple, int]:
    """Named layouts used in problem specs -> (order, pad).

    ``contiguous``: row-major. ``padded``: row-major with gaps after each row.
    ``transposed``: the last two dims swapped in memory (a .t() / .mT view).
    ``bnhd``: for (B, H, N, D) tensors stored as (B, N, H, D), i.e. heads interleaved.
    """
    order = tuple(range(ndim))
    if name == "contiguous":
        return order, 0
    if name == "padded":
        return order, 3
    if name == "transposed":
        return order[:-2] + (order[-1], order[-2]), 0
    if name == "transposed-padded":
        return order[:-2] + (order[-1], order[-2]), 5
    if name == "bnhd":
        if ndim != 4:
            raise ValueError("bnhd layout needs 4 dims")
        return (0, 2, 1, 3), 0
    if name == "bnhd-padded":
        return (0, 2, 1, 3), 8
    raise ValueError(f"unknown layout {name!r}")
