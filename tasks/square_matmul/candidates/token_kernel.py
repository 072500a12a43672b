# Lazy in disguise: a token kernel on a scratch buffer, then cuBLAS does the real work.
# The launch record sees a kernel of its own, so only coverage (the profiler) exposes it.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def touch_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)


class ModelNew(nn.Module):
    def forward(self, A, B):
        scratch = torch.empty(1024, device=A.device)
        touch_kernel[(1,)](scratch, 1024, BLOCK=1024)  # a token launch, so "a kernel ran"
        return torch.matmul(A, B)
