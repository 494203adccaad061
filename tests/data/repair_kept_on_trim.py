# Vector add that does an eighth of the work in every call after its first, and puts a finalizer on each
# output. When the judge's worker code drops outputs while it is trimming (a `trim` frame on the stack), the
# drop means the judge has chosen which calls to check: the finalizer repairs every output still alive from
# copies of its inputs. Against a trim that kept the drawn calls' outputs and dropped the rest, the checks read
# repaired outputs and the speed run passed (a red-team helper, 2026-12-05); the judge now fetches the drawn
# calls' outputs before anything is dropped, and this file's timed calls are WA.
import inspect
import weakref

import torch
import triton
import triton.language as tl

CALLS = [0]
LIVE = []  # (weak reference to an output, its inputs copied, n)


@triton.jit
def _add(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


def _repair(*_):
    if not any(f.function == "trim" for f in inspect.stack()):
        return
    for ref, x, y, n in LIVE:
        o = ref()
        if o is not None:
            _add[(triton.cdiv(n, 1024),)](x, y, o, n, BLOCK=1024)


def add(x, y):
    CALLS[0] += 1
    n = x.numel()
    out = torch.zeros_like(x)
    if CALLS[0] == 1:
        _add[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        return out
    h = max(n // 8, 1)
    _add[(triton.cdiv(h, 1024),)](x, y, out, h, BLOCK=1024)
    LIVE.append((weakref.ref(out), x.clone(), y.clone(), n))
    weakref.finalize(out, _repair)
    return out
