# Wrong: returns the sum, not the mean.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def squared_error_sum_kernel(p_ptr, t_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    d = tl.load(p_ptr + offsets, mask=mask, other=0.0) - tl.load(t_ptr + offsets, mask=mask, other=0.0)
    tl.atomic_add(out_ptr, tl.sum(d * d, axis=0))


class ModelNew(nn.Module):
    def forward(self, predictions, targets):
        p, t = predictions.contiguous(), targets.contiguous()
        out = torch.zeros((), device=p.device, dtype=torch.float32)
        squared_error_sum_kernel[(triton.cdiv(p.numel(), 8192),)](p, t, out, p.numel(), BLOCK=8192)
        return out
