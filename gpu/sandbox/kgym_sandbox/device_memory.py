"""GPU memory in use on the device while an evaluation runs, as the judge samples it between
requests: after every correctness call and at the end of timing. It counts every process on
the device (the judge, the candidate's, the reference runner, the next evaluation's warming
processes: about 0.5 GiB each for a context), and what PyTorch's caching allocators keep
reserved, so a sample after a call still sees that call's peak. Its maximum is
ExecResult.peak_device_memory_mb.

Who ran out: kgym's own processes need the GPU's memory too (the judge's inputs, reference
outputs and the buffers it shares, the reference runner's), so a failed allocation, the
candidate's or one of kgym's own processes' while the candidate's runs beside them, is the
candidate's fault (RESOURCE_LIMIT) only when the candidate's side held more than
CANDIDATE_SHARE of the GPU; otherwise it is kgym's own, and the executor evaluates again.
The candidate's side is what every process but kgym's own holds (device_memory.kgym_pids), as
NVML reports it per process (nvidia-ml-py), so it includes children the candidate started;
where NVML is missing or its pids are not this namespace's, what the device has in use
beyond the judge's own."""
import os

import torch

from . import shared_tensors

CANDIDATE_SHARE = 0.5
MAX_PAD_BYTES = 512 << 20  # the largest pad a move holds (timing.draw_pad)


class Peak:
    """The most in use so far, kept in `result` (peak_device_memory_mb, device_memory_total_mb),
    and by part (`sample(part)`: device_memory_by_part_mb, and the judge's own share in
    judge_memory_by_part_mb). What the last evaluation's processes, still exiting as this one
    loads (`exiting_pids`), hold is not this one's: NVML's count of it is taken off while they
    hold any. That misses what a process NVML no longer lists has not yet given back (H200,
    KernelBench's l1_47 loading after l1_21: 27 GiB in use, the judge holding nothing), so the
    load's parts are kept by part but left out of the peak: what a model's build holds stays
    through the trials, where it counts."""

    def __init__(self, device: str, result: dict):
        self.cuda, self.result = device == "cuda", result
        self.exiting = set(exiting_pids)

    def sample(self, part: str = None) -> None:
        if not self.cuda:
            return
        free, total = torch.cuda.mem_get_info()
        in_use = (total - free - self.exiting_held()) / (1 << 20)
        if not (part or "").startswith("load"):
            self.result["peak_device_memory_mb"] = max(self.result.get("peak_device_memory_mb", 0.0), in_use)
        self.result["device_memory_total_mb"] = total / (1 << 20)
        if part:
            keep_most(self.result.setdefault("device_memory_by_part_mb", {}), part, in_use)
            keep_most(self.result.setdefault("judge_memory_by_part_mb", {}), part, judge_held() / (1 << 20))

    def exiting_held(self) -> int:
        if not self.exiting:
            return 0
        usage = per_process_usage()
        held = sum(usage.get(pid, 0) for pid in self.exiting) if usage is not None else 0
        if not held:  # gone (or NVML cannot tell): asked no more
            self.exiting = set()
        return held


def keep_most(by_part: dict, part: str, value: float) -> None:
    by_part[part] = max(by_part.get(part, 0.0), value)


def judge_held() -> int:
    """Bytes this process holds on the device: its caching allocator's reserve and the buffers
    it made to share (shared_tensors), whether or not the other side still maps them."""
    return torch.cuda.memory_reserved() + shared_tensors.CudaDriver.allocated


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


def over_share(held: int, total: int) -> bool:
    """The rule on bytes: the candidate's side holding more than CANDIDATE_SHARE of the device."""
    return held > CANDIDATE_SHARE * total


def candidate_side(per_process: dict, kgym_pids: set) -> int:
    """Bytes held by every process but kgym's own (`per_process`: pid -> bytes)."""
    return sum(held for pid, held in per_process.items() if pid not in kgym_pids)


def per_process_usage():
    """pid -> bytes each process holds on this process's GPU, as NVML reports them; None where
    NVML is missing or does not list this process (a pid namespace NVML does not map)."""
    try:
        import pynvml
        pynvml.nvmlInit()
        uuid = str(torch.cuda.get_device_properties(torch.cuda.current_device()).uuid)
        handle = pynvml.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith("GPU-") else "GPU-" + uuid)
        usage = {p.pid: p.usedGpuMemory or 0 for p in pynvml.nvmlDeviceGetComputeRunningProcesses(handle)}
    except Exception:  # no NVML (or no driver library): the device-wide rule stands
        return None
    return usage if os.getpid() in usage else None


# kgym's processes on the device besides the judge (the reference runner, the last evaluations'
# processes still exiting), set by the judge once per evaluation. A pair prepared for the next
# evaluation after this one began is not among them: its contexts (about 0.5 GiB a process)
# count on the candidate's side, far below its share.
kgym_pids = set()
# Of those, the last evaluations' (not this one's reference runner), set with them.
exiting_pids = set()


def exhausted_account(held: str, message: str) -> tuple:
    """(message, evidence) for a candidate whose side held more than its share when a GPU
    allocation failed, its own process's or kgym's: one account, whichever lost the race."""
    return (f"the candidate exhausted the GPU's memory ({held}): {message}",
            {"kind": "CANDIDATE_OUT_OF_DEVICE_MEMORY", "detail": held[:200], "source": "judge"})


def candidate_exhausted() -> tuple:
    """Asked in the judge right after an allocation failed, the candidate's or one of kgym's
    processes' (the candidate's still alive, holding what it holds): (whether the candidate's
    side took more than its share, a sentence saying what it held)."""
    free, total = torch.cuda.mem_get_info()
    usage = per_process_usage()
    if usage is not None:
        held, how = candidate_side(usage, kgym_pids | {os.getpid()}), "NVML, per process"
    else:  # the reference runner's share, one output or so, is counted with the candidate's
        held = total - free - torch.cuda.memory_reserved() - shared_tensors.CudaDriver.allocated
        how = "the device's use beyond the judge's"
    return over_share(held, total), f"the candidate's side held {held >> 20} of {total >> 20} MiB ({how})"
