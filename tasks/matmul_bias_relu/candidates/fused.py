# One kernel: the GEMM with bias and ReLU applied to the accumulator before the store.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_relu_kernel(x_ptr, w_ptr, bias_ptr, out_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                       BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, K, BK):
        x = tl.load(x_ptr + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K),
                    other=0.0)
        w = tl.load(w_ptr + rn[None, :] * K + (k + rk)[:, None], mask=(rn[None, :] < N) & ((k + rk)[:, None] < K),
                    other=0.0)
        acc = tl.dot(x, w, acc, input_precision="tf32x3")
    acc += tl.load(bias_ptr + rn, mask=rn < N, other=0.0)[None, :]
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], tl.maximum(acc, 0.0), mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = x.contiguous()
        M, K = x.shape
        N = self.linear.weight.shape[0]
        out = torch.empty((M, N), device=x.device, dtype=torch.float32)
        grid = (triton.cdiv(M, 128), triton.cdiv(N, 128))
        linear_relu_kernel[grid](x, self.linear.weight, self.linear.bias, out, M, N, K, BM=128, BN=128, BK=32,
                                 num_warps=8, num_stages=3)
        return out
