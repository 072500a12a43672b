# Correct but lazy: PyTorch computes exp and the row sums; Triton only divides.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def divide_rows_kernel(e_ptr, s_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offsets = tl.arange(0, BLOCK)
    mask = offsets < cols
    e = tl.load(e_ptr + row * cols + offsets, mask=mask)
    tl.store(out_ptr + row * cols + offsets, e / tl.load(s_ptr + row), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        e = torch.exp(x - x.max(dim=-1, keepdim=True).values).contiguous()
        s = e.sum(dim=-1).contiguous()
        out = torch.empty_like(e)
        divide_rows_kernel[(e.shape[0],)](e, s, out, e.shape[1], BLOCK=triton.next_power_of_2(e.shape[1]))
        return out
