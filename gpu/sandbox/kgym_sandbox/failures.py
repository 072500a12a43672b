"""A verdict that ends an evaluation, and how an exception is classified. Used by the judge
and by the candidate process (which reports its failures to the judge as data)."""
import errno
import traceback

import torch

MAX_MESSAGE_CHARS = 2000  # a candidate's exception text flows into prompts and stores


class Failure(Exception):
    """Ends the evaluation with a verdict."""

    def __init__(self, verdict: str, phase: str, message: str, evidence=None, own_memory: bool = False):
        """`own_memory`: kgym's own processes ran out of GPU memory (ExecResult's
        own_device_memory_exhausted: the executor tries again)."""
        super().__init__(message)
        self.verdict, self.phase, self.message = verdict, phase, message[:MAX_MESSAGE_CHARS]
        self.evidence, self.own_memory = evidence or [], own_memory


def out_of_device_memory(text: str) -> bool:
    """An allocation on the GPU failed, by an exception's text (PyTorch's caching allocator,
    the driver, cuBLAS's or cuDNN's own allocations)."""
    return any(s in text for s in ("CUDA out of memory", "CUBLAS_STATUS_ALLOC_FAILED",
                                   "CUDNN_STATUS_ALLOC_FAILED", "CUDA error: out of memory"))


def harmed_warm_up(text: str) -> bool:
    """A process's confinement or CUDA warm-up failed (before any candidate code existed). It
    was prepared beside a running evaluation, which may have held the whole GPU: a context or
    a library handle made then can fail with other texts than out of memory (cuDNN's
    CUDNN_STATUS_INTERNAL_ERROR, seen on an H100), so it is kgym's own shortage, tried again
    in fresh processes."""
    return "confinement failed" in text


def classify(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    # ENOMEM from the OS (an input set mapped past the candidate's address-space limit, seen at
    # KernelBench level 1's sizes on the CPU) is memory as much as Python's MemoryError.
    if isinstance(exc, (MemoryError, torch.OutOfMemoryError)) or "can't allocate memory" in text or \
            (isinstance(exc, OSError) and exc.errno == errno.ENOMEM):
        return "RESOURCE_LIMIT"
    if "CUDA error" in text or "cudaError" in text or "CUDA driver error" in text \
            or "illegal memory access" in text:
        return "CUDA_ERROR"
    return "RUNTIME_ERROR"


def last_line(exc: BaseException) -> str:
    return traceback.format_exception_only(type(exc), exc)[-1].strip()[:MAX_MESSAGE_CHARS]


def failure_from(exc: BaseException, phase: str, what: str) -> Failure:
    return Failure(classify(exc), phase, f"{what}: {last_line(exc)}")
