# Wrong: forgets the learned scale and shift.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def plain_norm_kernel(x_ptr, out_ptr, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offsets = tl.arange(0, BLOCK)
    mask = offsets < cols
    x = tl.load(x_ptr + row * cols + offsets, mask=mask, other=0.0)
    centered = tl.where(mask, x - tl.sum(x, axis=0) / cols, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(centered * centered, axis=0) / cols + eps)
    tl.store(out_ptr + row * cols + offsets, centered * rstd, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        plain_norm_kernel[(x.shape[0],)](x, out, x.shape[1], self.norm.eps, BLOCK=triton.next_power_of_2(x.shape[1]))
        return out
