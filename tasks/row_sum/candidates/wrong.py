# Wrong: skips the last partial block of rows.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sum_most_rows_kernel(x_ptr, out_ptr, dim1, dim2, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    batch = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    acc = tl.zeros([BLOCK_C], dtype=tl.float32)
    for start in range(0, dim1 - BLOCK_R, BLOCK_R):
        rows = start + tl.arange(0, BLOCK_R)
        mask = (rows[:, None] < dim1) & (cols[None, :] < dim2)
        acc += tl.sum(tl.load(x_ptr + batch * dim1 * dim2 + rows[:, None] * dim2 + cols[None, :], mask=mask,
                              other=0.0), axis=0)
    tl.store(out_ptr + batch * dim2 + cols, acc, mask=cols < dim2)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        x = x.contiguous()
        b, d1, d2 = x.shape
        out = torch.empty((b, 1, d2), device=x.device, dtype=x.dtype)
        sum_most_rows_kernel[(b, triton.cdiv(d2, 128))](x, out, d1, d2, BLOCK_R=32, BLOCK_C=128)
        return out
