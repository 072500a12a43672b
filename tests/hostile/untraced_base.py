# The pieces the candidates that switch their own trace off share (each is appended to this file:
# hostile_case.base): the CUPTI library the tracing library loaded into their process, reached
# through ctypes, and a model that runs a token kernel of its own in every call and computes the
# product only where it does not defer it (each file's `_state`: "defer", and "pending", the
# deferred calls' inputs and unwritten outputs in the order of the batch's calls).
import ctypes

import torch
import torch.nn as nn
import triton
import triton.language as tl

CONCURRENT_KERNEL = 10  # CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL (cupti_activity.h)


@triton.jit
def _token_kernel(x_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets))


def _cupti():
    """The CUPTI library the tracing library loaded into this process, or None."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if "/libcupti.so" in path:
                return ctypes.CDLL(path)
    return None


class ModelNew(nn.Module):
    def forward(self, A, B):
        out = torch.empty((A.shape[0], B.shape[1]), dtype=A.dtype, device=A.device)
        _token_kernel[(1,)](out, BLOCK=128)  # a kernel of its own in every call's window
        if _state["defer"]:
            _state["pending"].append((A, B, out))
            return out
        return torch.matmul(A, B)
