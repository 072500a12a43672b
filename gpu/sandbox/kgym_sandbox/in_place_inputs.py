"""A task's get_inputs() writing its random tensors straight into buffers the judge names.

The timing's refill makes a fresh input set before every batch and copies it into both
sides' buffers: at KernelBench's level-1 sizes (8 GiB a set) that was a write of the fresh
set, then a read and a write per side, more GPU time than the calls it feeds. Made inside
the reference runner's own buffers, one read and one write (the candidate's copy) are left.
Only the random factories are redirected (torch.rand, randn, randint: nearly every
KernelBench get_inputs returns what they made); the values are those the same factory would
have made in a fresh tensor, so the inputs stay what the task asks for. Whatever get_inputs
returns that is not its target in place is copied as before (`settled` says which).
"""
import torch
from torch.overrides import TorchFunctionMode

from .compare import shares_memory

RANDOM_FACTORIES = (torch.rand, torch.randn, torch.randint)
_FACTORY_OPTIONS = ("dtype", "device", "layout", "pin_memory", "requires_grad")


def requested_shape(func, args: tuple, kwargs: dict):
    """The shape a random factory call asks for, or None where it cannot be told."""
    size = kwargs.get("size")
    if size is None:
        if func is torch.randint:  # randint(high, size) or randint(low, high, size)
            size = args[-1] if len(args) in (2, 3) else None
        elif len(args) == 1 and isinstance(args[0], (tuple, list, torch.Size)):
            size = args[0]
        else:
            size = args
    if not isinstance(size, (tuple, list, torch.Size)) or not all(isinstance(s, int) for s in size):
        return None
    return tuple(size)


def requested_dtype(func, kwargs: dict) -> torch.dtype:
    return kwargs.get("dtype") or (torch.int64 if func is torch.randint else torch.get_default_dtype())


class RandomInto(TorchFunctionMode):
    """Inside it, the n-th random factory call whose shape and dtype are those of the next
    unused target writes into that target (`out=`) and returns it; every other call runs as
    it would."""

    def __init__(self, targets: list):
        super().__init__()
        self.targets, self.used = list(targets), 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in RANDOM_FACTORIES and "out" not in kwargs and self.used < len(self.targets) \
                and not kwargs.get("requires_grad"):
            target = self.targets[self.used]
            asked_device = kwargs.get("device")
            if requested_shape(func, args, kwargs) == tuple(target.shape) and \
                    requested_dtype(func, kwargs) == target.dtype and target.is_contiguous() and \
                    (asked_device is None or torch.device(asked_device).type == target.device.type) and \
                    kwargs.get("layout", torch.strided) == torch.strided:
                self.used += 1
                for name in _FACTORY_OPTIONS:
                    kwargs.pop(name, None)
                return func(*args, out=target, **kwargs)
        return func(*args, **kwargs)


def settled(tensors: list, targets: list) -> tuple:
    """What to copy, for `tensors` (input sets flattened as packing.pack orders them) about to
    be copied into `targets` (the same order): (tensors, which are already in place). A tensor
    lying in another target's memory than its own (get_inputs returned its tensors in another
    order, or a view of one) is cloned first, or the copy into its neighbour would overwrite it."""
    def in_place(v, t) -> bool:
        return v.data_ptr() == t.data_ptr() and v.shape == t.shape and v.stride() == t.stride() and v.dtype == t.dtype

    placed = [in_place(v, t) for v, t in zip(tensors, targets)]
    placed += [False] * (len(tensors) - len(placed))
    return [v.clone() if not placed[i] and any(shares_memory(v, t) for t in targets) else v
            for i, v in enumerate(tensors)], placed
