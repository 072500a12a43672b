# Wrong: uses the tanh approximation with a wrong constant.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bad_gelu_kernel(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    gelu = x * tl.sigmoid(1.0 * x)
    tl.store(out_ptr + offsets, gelu * scale + x, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        out = torch.empty_like(x)
        bad_gelu_kernel[(triton.cdiv(x.numel(), 4096),)](x, out, x.numel(), self.scale, BLOCK=4096)
        return out
