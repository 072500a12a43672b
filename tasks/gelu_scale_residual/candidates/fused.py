import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gelu_scale_residual_kernel(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    gelu = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    tl.store(out_ptr + offsets, gelu * scale + x, mask=mask)


def gelu_scale_residual(x, scale, out=None):
    x = x.contiguous()
    out = torch.empty_like(x) if out is None else out
    n = x.numel()
    BLOCK = 4096
    gelu_scale_residual_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, scale, BLOCK=BLOCK)
    return out


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return gelu_scale_residual(x, self.scale)
