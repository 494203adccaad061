"""The record of one call's launch sequence, as both sides see it (the replay check).

The worker (judge.untrusted.trace) records, while a judged call runs, every
launch of one of the file's own kernels and every PyTorch operator of the
call that allocates, fills or copies memory; the judge (judge.replay) checks
the record and has it replayed alone, on fresh inputs, by a process that never
imports the submission (judge.untrusted.replay). This module holds what the
three agree on: the limits, which operators are replayed, and how a value is
written in the record. Standard library only.

A record is JSON::

    {"storages": [{"id", "nbytes", "device", "origin": "input"|"made"|"outside"|"empty",
                   "arg" (input: the argument's index), "event" (made: the event that made it),
                   "snapshot": true|false (outside: its bytes follow as a tensor frame)}],
     "events": [{"k": "launch", "kernel", "grid", "args", "kwargs"}
                | {"k": "op", "op": "copy_.default", "args", "kwargs", "made": [id | null, ...]}
                | {"k": "foreign", "kernel"}],
     "outputs": [ref | null, ...], "truncated": "" | why}

A tensor is a reference ``{"ref": [storage id, offset, shape, strides, dtype]}``
into a storage (offset and strides in elements of its dtype); a view needs no
event of its own. Other values are JSON scalars (ints, booleans, null, strings of at most
MAX_STRING characters) or tagged objects: ``{"float": bits}`` (a float by
the 64 bits of its IEEE double, so that a NaN's sign and payload and every
other value arrive exactly), ``{"tuple": [...]}``, ``{"list": [...]}``,
``{"tl_dtype": "fp32"}``, ``{"constexpr": value}``, ``{"torch_dtype":
"float32"}``, ``{"device": "cuda:0"}``, ``{"layout": "strided"}``,
``{"memory_format": "contiguous_format"}``, ``{"tensor_descriptor": {"base":
ref, "shape", "strides", "block_shape", "padding", "round_f32_to_tf32"}}``
(Triton's host-side TMA descriptor), and ``{"opaque": "type name"}`` for
anything else (which the judge refuses, or for Triton's own types does not
replay).
"""

from __future__ import annotations

MAX_EVENTS = 4096  # launches and operators of one call; more, and the record is marked truncated
MAX_STORAGES = 256  # distinct memory blocks one call may touch
MAX_DEPTH = 4  # nesting of tuples and lists in an argument
MAX_SEQ = 64  # items in one tuple or list
MAX_JSON = 512 << 10  # the record's JSON, at most (a reply's JSON frame holds 1 MiB)
MAX_DIMS = 8
MAX_NAME = 300
# A string argument is recorded whole up to this length; a longer one is not recorded at all (an opaque
# value, which the judge refuses): never cut, or the replay would run on another string than the worker.
MAX_STRING = 4096

# PyTorch operators (aten, by overload packet) that the replay redoes: each
# makes new memory or writes into memory. Every other operator the worker's
# watch allows (views, metadata) is not an event: each reference carries its
# own view of its storage.
MAKES = frozenset(
    """
    arange empty empty_like empty_strided new_empty new_empty_strided zeros zeros_like new_zeros
    ones ones_like new_ones full full_like new_full clone _to_copy cat stack lift_fresh_copy
    """.split()
)
WRITES = frozenset("fill_ zero_ copy_".split())
REPLAYED = MAKES | WRITES

# Tags of the values the replay can rebuild, besides JSON scalars and tensor references.
TAGS = (
    "tuple",
    "list",
    "tl_dtype",
    "constexpr",
    "torch_dtype",
    "device",
    "layout",
    "memory_format",
    "tensor_descriptor",
    "float",
    "opaque",
)
LAYOUTS = ("strided",)
MEMORY_FORMATS = ("contiguous_format", "preserve_format", "channels_last", "channels_last_3d")
# Triton element types a kernel may be handed as a value (str(tl.float32) == "fp32").
TL_DTYPES = (
    "int1",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "fp8e4nv",
    "fp8e5",
    "fp8e4b15",
    "fp8e4b8",
    "fp8e5b16",
    "fp16",
    "bf16",
    "fp32",
    "fp64",
    "void",
)


def float_bits(value: float) -> int:
    """A float as the 64 bits of its IEEE double (the record's ``{"float": bits}``)."""
    import struct

    return struct.unpack("<Q", struct.pack("<d", value))[0]


def bits_float(bits: int) -> float:
    """The float whose IEEE double has these 64 bits (ValueError: not 64 bits)."""
    import struct

    if not isinstance(bits, int) or isinstance(bits, bool) or not 0 <= bits < (1 << 64):
        raise ValueError("a float's bits must be an integer of 64 bits")
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def snapshot_budget(input_bytes: int) -> int:
    """Bytes of memory from outside the call (made before it, or outside PyTorch) that a record may carry.

    The judge adds this much to what a case's reply may hold; beyond it the
    worker sends the storage without its bytes, and the judge refuses it.
    """
    return 4 * int(input_bytes) + (8 << 20)


def itemsize(dtype: str) -> int:
    from judge.shared.wire import DTYPES

    return DTYPES[dtype]


def extent(offset: int, shape, strides) -> int:
    """Elements of the storage a view reaches, from its start: 0 for an empty view."""
    if any(s == 0 for s in shape):
        return 0
    return offset + 1 + sum((s - 1) * st for s, st in zip(shape, strides))


def event_label(events: list, index: int) -> str:
    """'launch 2 of 3, add_kernel grid (4,)' or 'copy_ after launch 1 of 3': how a message names an event.

    ``events`` are dicts or objects with ``k``/``kind``, ``kernel``, ``grid`` and ``op``.
    """

    def get(e, key):
        return e.get(key) if isinstance(e, dict) else getattr(e, key, None)

    launches = [i for i, e in enumerate(events) if (get(e, "k") or get(e, "kind")) == "launch"]
    e = events[index]
    if (get(e, "k") or get(e, "kind")) == "launch":
        grid = tuple(get(e, "grid") or ())
        return f"launch {launches.index(index) + 1} of {len(launches)}, {get(e, 'kernel')} grid {grid}"
    op = str(get(e, "op") or "?").split(".")[0]
    before = [i for i in launches if i < index]
    if not before:
        return f"{op} before any launch" if launches else f"{op} (the call launched no kernel)"
    return f"{op} after launch {len(before)} of {len(launches)}"
