"""GPU memory in use on the device while an evaluation runs, as the judge samples it between
requests: after every correctness call and at the end of timing. It counts every process on
the device (the judge, the candidate's, the reference runner, the next evaluation's warming
processes: about 0.5 GiB each for a context), and what PyTorch's caching allocators keep
reserved, so a sample after a call still sees that call's peak. Its maximum is
ExecResult.peak_device_memory_mb."""
import torch


class Peak:
    def __init__(self, device: str):
        self.cuda, self.mb = device == "cuda", 0.0

    def sample(self) -> None:
        if self.cuda:
            free, total = torch.cuda.mem_get_info()
            self.mb = max(self.mb, (total - free) / (1 << 20))


def release(device: str) -> None:
    """Gives what the judge's caching allocator keeps but no tensor uses back to the device:
    the judge's shared buffers are allocated outside that allocator (shared_tensors), and the
    other processes of the evaluation cannot reuse what it keeps either."""
    if device == "cuda":
        torch.cuda.empty_cache()
