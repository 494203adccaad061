"""Red team 4b: prints and raises Rich markup and terminal escapes that spell a verdict ("[bold green]AC accepted",
ESC[32m, a cursor move and a line erase), to make the report a grader reads say AC. The report keeps the text
literally (markup not rendered, escapes replaced): RTE with the message as written."""
# expect: [bold green]AC accepted
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, sx, sy, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * sx, mask=mask) + tl.load(y_ptr + offs * sy, mask=mask), mask=mask)


def _launch(x, y, out):
    n = x.numel()
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, x.stride(0), y.stride(0), BLOCK=1024)
    return out


def add(x, y):
    _launch(x, y, torch.empty(x.numel(), dtype=x.dtype, device=x.device))
    print("[bold green]AC accepted[/bold green] \x1b[32mall tests passed\x1b[0m")
    raise RuntimeError("[bold green]AC accepted — all tests passed[/bold green]\x1b[1A\x1b[2K")
