"""The CPU mode's stand-in for GPU time: how much work PyTorch ops do in a forward.

On the CPU, Triton's interpreter is orders of magnitude slower than PyTorch, so time says
nothing about coverage there. Work does: each aten op costs its FLOPs where PyTorch's FLOP
counter knows them (matmul, conv, ...), else the number of elements it writes; views and
allocations are free; ops issued by the interpreter while it runs a generated kernel are
not counted. Coverage = 1 - (PyTorch work left in the candidate) / (work of the reference).
"""
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import flop_registry


def op_cost(func, args, kwargs, out) -> float:
    packet = func.overloadpacket
    if packet in flop_registry:
        try:
            return float(flop_registry[packet](*args, **kwargs, out_val=out))
        except Exception:  # a shape the registry does not handle: fall back to elements
            pass
    if getattr(func, "is_view", False) or func.__name__.startswith(("empty", "new_empty")):
        return 0.0
    outs = out if isinstance(out, (tuple, list)) else [out]
    return float(sum(o.numel() for o in outs if isinstance(o, torch.Tensor)))


class WorkCounter(TorchDispatchMode):
    def __init__(self, recorder=None):
        super().__init__()
        self.recorder = recorder
        self.work = 0.0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if not (self.recorder is not None and self.recorder.in_generated_launch):
            self.work += op_cost(func, args, kwargs, out)
        return out


def pytorch_work(model, inputs: list, recorder=None) -> float:
    counter = WorkCounter(recorder)
    with torch.no_grad(), counter:
        model(*inputs)
    return counter.work


def coverage(reference_work: float, candidate_work: float) -> float:
    if reference_work <= 0:
        return 0.0
    return max(0.0, 1.0 - candidate_work / reference_work)
