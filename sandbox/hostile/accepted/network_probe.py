# Tries to reach the network: public DNS servers, a registry, the default gateway.
import os
import socket
import torch
import triton
import triton.language as tl


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n, sx, sy, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * sx, mask=mask) + tl.load(y_ptr + offs * sy, mask=mask), mask=mask)


def honest_add(x, y):
    n = x.numel()
    out = torch.empty(n, dtype=x.dtype, device=x.device)
    _add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, x.stride(0), y.stride(0), BLOCK=1024)
    return out


def _gateway():
    try:
        for line in open("/proc/net/route").read().splitlines()[1:]:
            f = line.split()
            if f[1] == "00000000":
                return socket.inet_ntoa(bytes.fromhex(f[2])[::-1])
    except OSError:
        pass
    return None


def add(x, y):
    targets = [("1.1.1.1", 53), ("8.8.8.8", 53), ("pypi.org", 443), ("deb.debian.org", 80)]
    gw = _gateway()
    if gw:
        targets.append((gw, 53))
    for host, port in targets:
        try:
            socket.create_connection((host, port), timeout=2).close()
        except OSError:
            continue
        raise RuntimeError(f"ESCAPED: reached {host}:{port}")
    return honest_add(x, y)
