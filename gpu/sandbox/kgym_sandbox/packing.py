"""Argument lists (a task's inputs, its init inputs) as channel data: tensors go into a shared
arena the judge owns, everything else (ints, floats, nested tuples) as JSON values."""
import torch

from . import shared_tensors

MAX_DEPTH = 8


def pack(values: list, tensors: list) -> list:
    """JSON items for `values`; each tensor becomes {"tensor": i} and is appended to `tensors`
    at i (the caller puts them into a shared arena)."""
    return [_item(v, 0, tensors) for v in values]


def _item(value, depth: int, tensors: list):
    # Module-level, not a closure: a recursive closure is a reference cycle, and this one
    # held every input tensor of a batch until the cyclic collector ran (the judge's GPU
    # memory grew by a batch's inputs per batch on KernelBench's l2_1, then OOM).
    if isinstance(value, torch.Tensor):
        tensors.append(value)
        return {"tensor": len(tensors) - 1}
    if isinstance(value, (tuple, list)) and depth < MAX_DEPTH:
        return {"tuple" if isinstance(value, tuple) else "list": [_item(v, depth + 1, tensors) for v in value]}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"value": value}
    raise TypeError(f"cannot hand a {type(value).__name__} to the candidate")


def unpack(items, tensors: list) -> list:
    """The values `pack` described, with the shared tensors in place; ValueError on anything
    `pack` never writes."""
    if not isinstance(items, list):
        raise ValueError("malformed argument list")
    return [_value(v, 0, tensors) for v in items]


def _value(entry, depth: int, tensors: list):
    if not isinstance(entry, dict) or len(entry) != 1 or depth > MAX_DEPTH:
        raise ValueError("malformed argument")
    (kind, body), = entry.items()
    if kind == "tensor" and isinstance(body, int) and 0 <= body < len(tensors):
        return tensors[body]
    if kind in ("tuple", "list") and isinstance(body, list):
        values = [_value(v, depth + 1, tensors) for v in body]
        return tuple(values) if kind == "tuple" else values
    if kind == "value" and (body is None or isinstance(body, (bool, int, float, str))):
        return body
    raise ValueError("malformed argument")


def meta(values: list) -> list:
    """`values` with every tensor replaced by one of its shape and dtype on the meta device (no
    memory): the pattern of an argument list, from which its buffers are made before its values
    (RemoteCandidate.reserve_sets)."""
    return [_meta(v, 0) for v in values]


def _meta(value, depth: int):
    if isinstance(value, torch.Tensor):
        return torch.empty(tuple(value.shape), dtype=value.dtype, device="meta")
    if isinstance(value, (tuple, list)) and depth < MAX_DEPTH:
        made = [_meta(v, depth + 1) for v in value]
        return tuple(made) if isinstance(value, tuple) else made
    return value


def flat_specs(tensors: list) -> list:
    return [shared_tensors.spec_of(t) for t in tensors]
