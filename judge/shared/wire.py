"""The wire protocol between the trusted judge and the untrusted worker.

Everything that crosses the trust boundary goes through this module, in both
directions, and nothing else does: no pickle (unpickling a hostile worker's
bytes would run its code in the judge), only length-prefixed frames holding
either a JSON object or the raw bytes of one tensor.

A *message* is one JSON frame; when its ``tensors`` list is non-empty, one raw
frame per listed tensor follows, each exactly ``numel * itemsize`` bytes long.

The worker imports this module too, so it depends on the standard library and
torch only (and imports torch lazily, so the judge can frame messages before
torch is loaded).
"""

from __future__ import annotations

import json
import math
import mmap
import os
import select
import struct
import time
from collections.abc import Callable

PROTOCOL_VERSION = 1
# The worker's exit status when its reply descriptor no longer leads where it did at start-up: someone
# redirected it (and wrote replies of their own on the real channel). The judge counts it a forged reply.
EXIT_CHANNEL_REDIRECTED = 86

# Tensors may cross only in these dtypes; anything else in a reply is a protocol
# violation, not something the judge tries to interpret.
DTYPES = {
    "float64": 8,
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint8": 1,
    "bool": 1,
}
# Devices whose tensors' values can be read into a frame. A tensor of another device (meta), dtype (float8) or
# shape (more than MAX_DIMS sizes, one over MAX_SIZE) crosses as its descriptor alone, so that the judge can
# say what is wrong with it (judge.rules.outputs).
DEVICES = ("cpu", "cuda")
MAX_DIMS = 8
MAX_SIZE = 1 << 40
MAX_DESCRIBED_DIMS = 64  # of a shape sent without values: the sizes after these are left out


def can_carry(dtype: str, device: str, shape) -> bool:
    """Whether a tensor of this dtype (its wire name), device and shape crosses with its values."""
    return (
        dtype in DTYPES
        and device.split(":")[0] in DEVICES
        and len(shape) <= MAX_DIMS
        and all(0 <= s <= MAX_SIZE for s in shape)
    )


_LEN = struct.Struct(">Q")
MAX_JSON_FRAME = 1 << 20  # a JSON frame over 1 MiB is never legitimate
# A frame at least this long is read straight into a buffer of its own size (one copy, from the kernel);
# shorter ones through the reader's buffer.
_DIRECT = 1 << 16
# The pipe's buffer asked for (Linux's default is 64 KiB): a 512 MiB output crosses in 512 writes and
# reads instead of 8192 of each (tests/bench/wire_transfer.py).
PIPE_BYTES = 1 << 20


class ProtocolError(Exception):
    """The other side sent something that is not a well-formed message."""


class ChannelClosed(ProtocolError):
    """The other side closed its end (usually: the worker died)."""


class ChannelTimeout(ProtocolError):
    """No complete message arrived before the deadline."""


class OutputLimitExceeded(ProtocolError):
    """A reply declared more tensor bytes than the judge allows."""


# --------------------------------------------------------------------------- writing


def widen_pipe(fd: int) -> None:
    """Ask for a pipe buffer of PIPE_BYTES on ``fd``; where it is no pipe, or the system says no, nothing
    changes (the protocol works on any buffer size, only slower)."""
    try:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (OSError, AttributeError, ValueError):
        pass


def write_frame(fd: int, payload: bytes | memoryview) -> None:
    _write_all(fd, _LEN.pack(len(payload)))
    _write_all(fd, payload)


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view[: 1 << 20])
        view = view[n:]


def send(fd: int, message: dict, tensors: list | None = None) -> None:
    """Send ``message``; ``tensors`` are (descriptor, bytes) pairs appended in order."""
    tensors = tensors or []
    message = dict(message)
    message["tensors"] = [desc for desc, _ in tensors]
    write_frame(fd, json.dumps(message, allow_nan=True).encode())
    for _, payload in tensors:
        write_frame(fd, payload)


# --------------------------------------------------------------------------- reading


# A reader's deadline, in time.monotonic() seconds: none, a fixed one, or one asked again on each wait.
Deadline = float | Callable[[], float] | None


class Reader:
    """Reads frames from a file descriptor with a deadline and size limits."""

    def __init__(self, fd: int):
        self.fd = fd
        self._buf = bytearray()

    def _fill(self, n: int, deadline: Deadline) -> None:
        while len(self._buf) < n:
            if not self._wait(deadline):
                continue
            chunk = os.read(self.fd, max(n - len(self._buf), _DIRECT))
            if not chunk:
                raise ChannelClosed("the other side closed the channel")
            self._buf += chunk

    def _take(self, n: int) -> bytes:
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    def _wait(self, deadline: Deadline) -> bool:
        """Whether the descriptor is readable before the deadline (checked again each quarter second). A
        callable deadline is asked each time: it may move on (judge.starvation.Deadline)."""
        if deadline is None:
            return True
        left = (deadline() if callable(deadline) else deadline) - time.monotonic()
        if left <= 0:
            raise ChannelTimeout("timed out waiting for the worker")
        ready, _, _ = select.select([self.fd], [], [], min(left, 0.25))
        return bool(ready)

    def read_frame(self, max_len: int, deadline: Deadline = None, *, direct: bool = False) -> bytes | mmap.mmap:
        """One frame's bytes: ``bytes``, or with ``direct`` and a long frame, a writable buffer of its own (an
        anonymous mapping read into directly, no copy after the kernel's; the caller owns it)."""
        self._fill(_LEN.size, deadline)
        (length,) = _LEN.unpack(self._buf[: _LEN.size])
        if length > max_len:
            raise OutputLimitExceeded(f"a frame of {length} bytes exceeds the limit of {max_len}")
        if not direct or length < _DIRECT:
            self._fill(_LEN.size + length, deadline)
            del self._buf[: _LEN.size]
            return self._take(length)
        del self._buf[: _LEN.size]
        # The size was checked against the caller's limit above. An anonymous mapping, not bytearray(n),
        # which writes every page before the kernel copies into it: its pages are touched once, by the
        # read, and a frame declared long and never sent costs little.
        out = mmap.mmap(-1, length)
        have = min(len(self._buf), length)
        out[:have] = self._buf[:have]
        del self._buf[:have]
        view = memoryview(out)
        try:
            while have < length:
                if not self._wait(deadline):
                    continue
                n = os.readv(self.fd, [view[have:]])
                if not n:
                    raise ChannelClosed("the other side closed the channel")
                have += n
        finally:
            view.release()
        return out

    def recv(self, max_tensor_bytes: int, deadline: Deadline = None):
        """Read one message; returns (dict, [each tensor frame's bytes: bytes, or a buffer of its own for a long
        frame]) after validating framing."""
        raw = self.read_frame(MAX_JSON_FRAME, deadline)
        try:
            message = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            # ValueError covers bad JSON and integers of too many digits; RecursionError,
            # a value nested deeper than this interpreter parses.
            raise ProtocolError(f"malformed message: {type(exc).__name__}: {str(exc)[:200]}") from None
        if not isinstance(message, dict):
            raise ProtocolError("a message must be a JSON object")
        descs = message.get("tensors", [])
        if not isinstance(descs, list):
            raise ProtocolError("'tensors' must be a list")
        sizes = [tensor_nbytes(d) for d in descs]
        if sum(sizes) > max_tensor_bytes:
            raise OutputLimitExceeded(
                f"the reply declares {sum(sizes)} bytes of tensors; the limit is {max_tensor_bytes}"
            )
        payloads = []
        for size in sizes:
            payload = self.read_frame(size, deadline, direct=True)
            if len(payload) != size:
                raise ProtocolError(f"a tensor frame holds {len(payload)} bytes, expected {size}")
            payloads.append(payload)
        return message, payloads


# --------------------------------------------------------------------------- tensors


def tensor_nbytes(desc) -> int:
    """Validate a tensor descriptor from the wire and return its byte size."""
    if not isinstance(desc, dict):
        raise ProtocolError("a tensor descriptor must be an object")
    dtype = desc.get("dtype")
    shape = desc.get("shape")
    if dtype not in DTYPES:
        raise ProtocolError(f"dtype {dtype!r} may not cross the boundary")
    check_shape(shape)
    return math.prod(shape) * DTYPES[dtype]


def check_shape(shape, dims: int = MAX_DIMS, size: int = MAX_SIZE) -> None:
    """Raises ProtocolError unless ``shape`` (from the wire) is a list of at most ``dims`` sizes up to ``size``."""
    if not isinstance(shape, list) or len(shape) > dims:
        raise ProtocolError(f"a shape must be a list of at most {dims} sizes")
    for s in shape:
        if not isinstance(s, int) or isinstance(s, bool) or s < 0 or s > size:
            raise ProtocolError(f"bad size {s!r} in shape")


def torch_dtype(name: str):
    import torch

    return getattr(torch, name)


def dtype_name(dtype) -> str:
    return str(dtype).removeprefix("torch.")


def tensor_to_wire(t) -> tuple[dict, bytes | memoryview]:
    """A tensor's logical values, row-major, as (descriptor, bytes): a read-only view of a CPU copy of them,
    or of the tensor itself where it is a plain CPU tensor laid out row-major already (send it before
    anything writes to it)."""
    import torch

    t = t.detach()
    if not (t.device.type == "cpu" and _row_major(t)):
        t = _dense_cpu(t)
    desc = {"dtype": dtype_name(t.dtype), "shape": list(t.shape)}
    if t.numel() == 0:
        return desc, b""
    return desc, _bytes_view(t.reshape(-1).view(torch.uint8))


def _row_major(t) -> bool:
    """Strides exactly those of a fresh tensor of its shape (not ``is_contiguous``: see _dense_cpu)."""
    expect, want = 1, []
    for size in reversed(t.shape):
        want.append(expect)
        expect *= size
    return tuple(t.stride()) == tuple(reversed(want)) and not t.is_conj() and not t.is_neg()


def _bytes_view(flat) -> memoryview:
    """A read-only byte view of a 1-D uint8 CPU tensor (it keeps the tensor alive)."""
    return memoryview(flat.numpy()).toreadonly()


def _dense_cpu(t):
    """A row-major CPU copy with standard strides. Not ``.contiguous()``: it
    counts a (1,) tensor with stride (2,) as contiguous and returns it as it
    is, and then the byte view below fails (seen on the GPU)."""
    import torch

    out = torch.empty(tuple(t.shape), dtype=t.dtype, device="cpu")
    out.copy_(t.detach())
    return out


def tensor_from_wire(desc: dict, payload: bytes):
    """The inverse of tensor_to_wire; validates before touching torch."""
    import torch

    size = tensor_nbytes(desc)
    if size != len(payload):
        raise ProtocolError(f"tensor bytes ({len(payload)}) do not match its descriptor ({size})")
    dtype = torch_dtype(desc["dtype"])
    if size == 0:
        return torch.empty(desc["shape"], dtype=dtype)
    # A long frame from Reader.read_frame is a buffer of the caller's own: the tensor takes it over, no copy.
    owned = payload if isinstance(payload, (bytearray, mmap.mmap)) else bytearray(payload)
    flat = torch.frombuffer(owned, dtype=torch.uint8).view(dtype)
    return flat.reshape(desc["shape"])


def storage_to_wire(storage_tensor) -> bytes:
    """Raw bytes of a 1-D contiguous tensor used as a storage."""
    import torch

    t = _dense_cpu(storage_tensor)  # a copy of its own: the view below aliases nothing else
    if t.numel() == 0:
        return b""
    return _bytes_view(t.reshape(-1).view(torch.uint8))
