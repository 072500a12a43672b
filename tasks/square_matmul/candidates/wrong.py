# Wrong: multiplies by B transposed.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matmul_bt_kernel(a_ptr, b_ptr, c_ptr, N, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, N, BK):
        a = tl.load(a_ptr + rm[:, None] * N + (k + rk)[None, :])
        b = tl.load(b_ptr + rn[None, :] * N + (k + rk)[:, None])
        acc = tl.dot(a, b, acc, input_precision="tf32x3")
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


class ModelNew(nn.Module):
    def forward(self, A, B):
        N = A.shape[0]
        C = torch.empty_like(A)
        matmul_bt_kernel[(N // 64, N // 64)](A.contiguous(), B.contiguous(), C, N, BM=64, BN=64, BK=32)
        return C
