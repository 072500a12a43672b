# Wrong: divides by the mean absolute value instead of the root mean square.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mean_abs_norm_kernel(x_ptr, w_ptr, out_ptr, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offsets = tl.arange(0, BLOCK)
    mask = offsets < cols
    x = tl.load(x_ptr + row * cols + offsets, mask=mask, other=0.0)
    scale = 1.0 / (tl.sum(tl.abs(x), axis=0) / cols + eps)
    tl.store(out_ptr + row * cols + offsets, x * scale * tl.load(w_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(dim) + 0.5)
        self.eps = eps

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        mean_abs_norm_kernel[(x.shape[0],)](x, self.weight, out, x.shape[1], self.eps,
                                            BLOCK=triton.next_power_of_2(x.shape[1]))
        return out
