# Partly fused: cuDNN convolves; one Triton kernel does bias, ReLU and scale in one pass.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias_relu_scale_kernel(y_ptr, bias_ptr, out_ptr, n, plane, channels, scale, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    channel = (offsets // plane) % channels
    y = tl.load(y_ptr + offsets, mask=mask) + tl.load(bias_ptr + channel, mask=mask)
    tl.store(out_ptr + offsets, tl.maximum(y, 0.0) * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, scale):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1, bias=False)
        self.bias = nn.Parameter(torch.randn(out_channels, 1, 1) * 0.1)
        self.scale = scale

    def forward(self, x):
        y = self.conv(x).contiguous()
        out = torch.empty_like(y)
        n, c = y.numel(), y.shape[1]
        bias_relu_scale_kernel[(triton.cdiv(n, 4096),)](y, self.bias, out, n, y.shape[2] * y.shape[3], c,
                                                        self.scale, BLOCK=4096)
        return out
