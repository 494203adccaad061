"""What a call returned, described as data for the judge (both the correctness and the speed run use it).

Only exact ``torch.Tensor`` items are looked into: a subclass, or any object
of unknown type, could run code on any method call, so its type name is all
that is recorded.
"""

from __future__ import annotations

from judge.shared import wire

MAX_ITEMS = 16  # a result holds at most this many items worth describing


def kind_of(result) -> str:
    """ "tuple", "list", or the dotted type name of a single returned object."""
    if type(result) is tuple:
        return "tuple"
    if type(result) is list:
        return "list"
    return f"{type(result).__module__}.{type(result).__qualname__}"


def describe_outputs(result, copy: bool = False) -> tuple[list[dict], list[bytes]]:
    """(one descriptor per returned item, the raw bytes of each returned tensor). ``copy``: the bytes copied now,
    never a view of a tensor's own memory (wire.tensor_to_wire sends a CPU tensor laid out row-major as it is),
    for outputs read before more of the file's code runs (a grad group's backward) that could rewrite them."""
    import torch

    items = list(result) if type(result) in (tuple, list) else [result]
    outputs, tensors = [], []
    for item in items[:MAX_ITEMS]:
        if type(item) is not torch.Tensor:
            outputs.append(
                {
                    "kind": "other",
                    "type": f"{type(item).__module__}.{type(item).__qualname__}",
                    "tensor_subclass": issubclass(type(item), torch.Tensor),
                }
            )
            continue
        dtype, device, shape = wire.dtype_name(item.dtype), str(item.device), [int(s) for s in item.shape]
        if not wire.can_carry(dtype, device, shape):
            # No values to send (a meta tensor has none; float8 has no wire form; an expanded view may stand for
            # more bytes than any memory): what it is, for a WA that names its dtype, device or shape.
            shape = shape[: wire.MAX_DESCRIBED_DIMS]
            outputs.append({"kind": "tensor", "dtype": dtype, "shape": shape, "device": device, "sent": False})
            continue
        st = item.untyped_storage()
        outputs.append(
            {
                "kind": "tensor",
                "dtype": dtype,
                "shape": list(item.shape),
                "strides": list(item.stride()),
                "device": device,
                "ptr_range": (st.data_ptr(), st.data_ptr() + st.nbytes()) if st.nbytes() else None,
            }
        )
        desc, raw = wire.tensor_to_wire(item)
        tensors.append((desc, bytes(raw) if copy else raw))
    if len(items) > MAX_ITEMS:
        outputs.append({"kind": "other", "type": f"... {len(items) - MAX_ITEMS} more items"})
    return outputs, tensors
