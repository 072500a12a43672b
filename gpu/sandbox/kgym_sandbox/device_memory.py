"""GPU memory in use on the device while an evaluation runs, as the judge samples it between
requests: after every correctness call and at the end of timing. It counts every process on
the device (the judge, the candidate's, the reference runner, the next evaluation's warming
processes: about 0.5 GiB each for a context), and what PyTorch's caching allocators keep
reserved, so a sample after a call still sees that call's peak. Its maximum is
ExecResult.peak_device_memory_mb.

Who ran out: kgym's own processes need the GPU's memory too (the judge's inputs, reference
outputs and the buffers it shares, the reference runner's), so a failed allocation is the
candidate's fault (RESOURCE_LIMIT) only when its process held more than CANDIDATE_SHARE of
the GPU; otherwise it is kgym's own, and the executor evaluates again."""
import torch

from . import shared_tensors

CANDIDATE_SHARE = 0.5


class Peak:
    """The most in use so far, kept in `result` (peak_device_memory_mb, device_memory_total_mb)."""

    def __init__(self, device: str, result: dict):
        self.cuda, self.result = device == "cuda", result

    def sample(self) -> None:
        if self.cuda:
            free, total = torch.cuda.mem_get_info()
            self.result["peak_device_memory_mb"] = max(self.result.get("peak_device_memory_mb", 0.0),
                                                       (total - free) / (1 << 20))
            self.result["device_memory_total_mb"] = total / (1 << 20)


def large(result: dict) -> bool:
    """Whether an evaluation took more than CANDIDATE_SHARE of its device: the next one then
    starts only once this one's processes are gone (their memory back)."""
    return result.get("peak_device_memory_mb", 0.0) > CANDIDATE_SHARE * result.get("device_memory_total_mb", 0.0)


def release(device: str) -> None:
    """Gives what the judge's caching allocator keeps but no tensor uses back to the device:
    the judge's shared buffers are allocated outside that allocator (shared_tensors), and the
    other processes of the evaluation cannot reuse what it keeps either."""
    if device == "cuda":
        torch.cuda.empty_cache()


def charged_to_candidate(used: int, judge_own: int, total: int) -> bool:
    """The rule on bytes: the device's `used`, what the judge's process holds (its allocator's
    and the buffers it shares), the device's `total`. What is in use beyond the judge's is the
    candidate's process's and the reference runner's (whose own share is one output or so):
    more than CANDIDATE_SHARE of the device, and the candidate took it."""
    return used - judge_own > CANDIDATE_SHARE * total


def candidate_exhausted() -> bool:
    """Asked in the judge right after the candidate's process failed to allocate (it is
    still alive, holding what it holds)."""
    free, total = torch.cuda.mem_get_info()
    return charged_to_candidate(total - free, torch.cuda.memory_reserved() + shared_tensors.CudaDriver.allocated, total)
