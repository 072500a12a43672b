# KernelBench level 1, problem 23, answered wrong on purpose: each value divided by the sum of
# the exponentials but never exponentiated itself (x_i / sum exp(x_j)). Must be INCORRECT.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

softmax_source = r"""
#include <torch/extension.h>

constexpr int THREADS = 1024;

__device__ float block_reduce(float v, float* shared, bool is_max) {
    for (int offset = 16; offset > 0; offset /= 2) {
        float other = __shfl_down_sync(0xffffffff, v, offset);
        v = is_max ? fmaxf(v, other) : v + other;
    }
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < THREADS / 32 ? shared[lane] : (is_max ? -INFINITY : 0.f);
        for (int offset = 16; offset > 0; offset /= 2) {
            float other = __shfl_down_sync(0xffffffff, v, offset);
            v = is_max ? fmaxf(v, other) : v + other;
        }
        if (lane == 0) shared[0] = v;
    }
    __syncthreads();
    float result = shared[0];
    __syncthreads();
    return result;
}

__global__ void softmax_rows_kernel(const float* __restrict__ x, float* __restrict__ y, long cols) {
    __shared__ float shared[32];
    const float* row = x + blockIdx.x * cols;
    float* out = y + blockIdx.x * cols;
    float m = -INFINITY;
    for (long c = threadIdx.x; c < cols; c += THREADS) m = fmaxf(m, row[c]);
    m = block_reduce(m, shared, true);
    float s = 0.f;
    for (long c = threadIdx.x; c < cols; c += THREADS) s += __expf(row[c] - m);
    s = block_reduce(s, shared, false);
    float inv = 1.f / s;
    for (long c = threadIdx.x; c < cols; c += THREADS) out[c] = SOFTMAX_VALUE;
}

torch::Tensor softmax_rows(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 2, "x: a 2-D float32 CUDA tensor");
    auto input = x.contiguous();
    auto y = torch::empty_like(input);
    softmax_rows_kernel<<<input.size(0), THREADS>>>(input.data_ptr<float>(), y.data_ptr<float>(), input.size(1));
    return y;
}
"""

softmax_ext = load_inline(name="kb_softmax_wrong", cpp_sources="torch::Tensor softmax_rows(torch::Tensor x);",
                          cuda_sources=softmax_source.replace("SOFTMAX_VALUE", "row[c] * inv"),
                          functions=["softmax_rows"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return softmax_ext.softmax_rows(x)
