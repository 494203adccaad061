# Red team, 2026-11-30: written against the judge by someone who had not built it;
# it got AC before the fixes that followed (its docstring says how it cheated).
# expect: __self__
"""Cheat: the whole cheat (import judge.untrusted.guard, torch x + y, clearing the op record) is a rot13 string
run with exec, fetched as getattr(print.__self__, "ex" + "ec"). The static scan only sees string literals.
The launched kernel is defined in this file so it counts as an own launch."""
import torch
import triton
import triton.language as tl

_SRC = '\nvzcbeg gbepu, gevgba, gevgba.ynathntr nf gy\nvzcbeg whqtr.jbexre.thneq nf t\n\n@gevgba.wvg\nqrs gbhpu_xreary(bhg_cge, a, OYBPX: gy.pbafgrkce):\n    cvq = gy.cebtenz_vq(0)\n\nqrs nqq(k, l):\n    bhg = k + l\n    gbhpu_xreary[(1,)](bhg, k.ahzry(), OYBPX=16)\n    t._fgngr.jngpu.bcf.pyrne()\n    erghea bhg\n'

_run = getattr(print.__self__, "ex" + "ec")
_ns = {}
# (rot13 by str.translate: the red team used codecs, an import the scan has refused since 2026-12-03)
_ROT13 = str.maketrans("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
                       "nopqrstuvwxyzabcdefghijklmNOPQRSTUVWXYZABCDEFGHIJKLM")
_run(_SRC.translate(_ROT13), _ns)
_jit_touch = _ns["touch_kernel"]


@triton.jit
def touch_kernel(out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)


def add(x, y):
    _ns["touch_kernel"] = touch_kernel  # launch a kernel defined in this file (own launch)
    return _ns["add"](x, y)
