# Wrong: applies ReLU before adding the bias.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_then_bias_kernel(y_ptr, bias_ptr, out_ptr, n, cols, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    y = tl.maximum(tl.load(y_ptr + offsets, mask=mask), 0.0)
    tl.store(out_ptr + offsets, y + tl.load(bias_ptr + offsets % cols, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        y = torch.matmul(x, self.linear.weight.t()).contiguous()
        out = torch.empty_like(y)
        relu_then_bias_kernel[(triton.cdiv(y.numel(), 4096),)](y, self.linear.bias, out, y.numel(), y.shape[1],
                                                               BLOCK=4096)
        return out
