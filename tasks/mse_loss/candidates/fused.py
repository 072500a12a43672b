# Partial sums per program in one pass, then one tiny sum of the partials.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def squared_error_partials_kernel(p_ptr, t_ptr, partial_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    d = tl.load(p_ptr + offsets, mask=mask, other=0.0) - tl.load(t_ptr + offsets, mask=mask, other=0.0)
    tl.store(partial_ptr + pid, tl.sum(d * d, axis=0))


@triton.jit
def sum_partials_kernel(partial_ptr, out_ptr, count, scale, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, count, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        acc += tl.load(partial_ptr + offsets, mask=offsets < count, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) * scale)


class ModelNew(nn.Module):
    def forward(self, predictions, targets):
        p, t = predictions.contiguous(), targets.contiguous()
        n = p.numel()
        blocks = triton.cdiv(n, 8192)
        partials = torch.empty(blocks, device=p.device, dtype=torch.float32)
        squared_error_partials_kernel[(blocks,)](p, t, partials, n, BLOCK=8192)
        out = torch.empty((), device=p.device, dtype=torch.float32)
        sum_partials_kernel[(1,)](partials, out, blocks, 1.0 / n, BLOCK=1024)
        return out
