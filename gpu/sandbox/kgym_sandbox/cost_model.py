"""The CPU mode's stand-in for GPU time: how much work a forward does, op by op.

On the CPU, Triton's interpreter is orders of magnitude slower than PyTorch, so measured
time says nothing about a Triton candidate there. Work does:
- coverage: each aten op costs its FLOPs where PyTorch's FLOP counter knows them (matmul,
  conv, ...), else the number of elements it writes; views and allocations are free; ops the
  interpreter issues while it runs a generated kernel are not counted. Coverage =
  1 - (PyTorch work left in the candidate) / (work of the reference).
- modeled time: a roofline model of a GPU (H100 SXM figures below). Every kernel costs
  max(FLOPs / peak FLOP rate, bytes / peak bandwidth) plus a launch. A PyTorch op moves the
  bytes of its tensor inputs and outputs; a generated kernel moves the distinct addresses its
  tl.load/tl.store touched (caches absorb re-reads of one tile by many programs) and does the
  FLOPs of its tl.dot calls. The modeled speedup rewards what fusion saves on a GPU (memory
  passes and launches) and nothing else; it is labelled as modeled wherever it is shown.
"""
import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import flop_registry

PEAK_BYTES_PER_S = 3.35e12   # H100 SXM HBM3
PEAK_FLOPS = 67e12           # H100 SXM FP32 (non-tensor-core); one rate for PyTorch and Triton
LAUNCH_S = 2e-6              # one kernel launch


def kernel_seconds(flops: float, nbytes: float) -> float:
    return LAUNCH_S + max(flops / PEAK_FLOPS, nbytes / PEAK_BYTES_PER_S)


def _tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _tensors(item)


def op_cost(func, args, kwargs, out):
    """(work, flops, bytes) of one aten op; (0, 0, 0) for views and allocations."""
    if getattr(func, "is_view", False) or func.__name__.startswith(("empty", "new_empty")):
        return 0.0, 0.0, 0.0
    written = sum(t.numel() for t in _tensors(out))
    nbytes = float(sum(t.numel() * t.element_size() for t in _tensors(list(args) + list(kwargs.values())))
                   + sum(t.numel() * t.element_size() for t in _tensors(out)))
    flops = 0.0
    packet = func.overloadpacket
    if packet in flop_registry:
        try:
            flops = float(flop_registry[packet](*args, **kwargs, out_val=out))
        except Exception:  # a shape the registry does not handle: elements stand in
            flops = 0.0
    return (flops if flops > 0 else float(written)), flops, nbytes


class WorkCounter(TorchDispatchMode):
    def __init__(self, recorder=None):
        super().__init__()
        self.recorder = recorder
        self.work = 0.0
        self.seconds = 0.0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if not (self.recorder is not None and self.recorder.in_generated_launch):
            work, flops, nbytes = op_cost(func, args, kwargs, out)
            self.work += work
            if nbytes > 0 or flops > 0:
                self.seconds += kernel_seconds(flops, nbytes)
        return out


class KernelTraffic:
    """What one generated kernel did in the interpreter: addresses touched, dot FLOPs."""

    def __init__(self):
        self.addresses = {}  # element size -> list of address arrays
        self.flops = 0.0

    def touch(self, pointers, mask, element_bytes: int) -> None:
        self.addresses.setdefault(element_bytes, []).append(np.asarray(pointers)[np.asarray(mask, dtype=bool)])

    def seconds(self) -> float:
        nbytes = sum(size * np.unique(np.concatenate(parts)).size for size, parts in self.addresses.items())
        return kernel_seconds(self.flops, float(nbytes))


def pytorch_work(model, inputs: list, recorder=None, outputs: list = None) -> tuple:
    """(work, modeled seconds) of one forward; generated kernels add their own seconds
    through the recorder (launches.py) while the counter runs. The forward's output is
    appended to `outputs` when given (the profiled pass must compute the same answer)."""
    counter = WorkCounter(recorder)
    if recorder is not None:
        recorder.modeled_kernel_seconds = 0.0
    with torch.no_grad(), counter:
        out = model(*inputs)
    if outputs is not None:
        outputs.append(out)
    generated = recorder.modeled_kernel_seconds if recorder is not None else 0.0
    return counter.work, counter.seconds + generated


def coverage(reference_work: float, candidate_work: float) -> float:
    if reference_work <= 0:
        return 0.0
    return max(0.0, 1.0 - candidate_work / reference_work)
