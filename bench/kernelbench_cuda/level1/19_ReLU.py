# KernelBench level 1, problem 19 (ReLU), as a CUDA kernel built with load_inline.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

relu_source = r"""
#include <torch/extension.h>

__global__ void relu_kernel(const float4* __restrict__ x, float4* __restrict__ y, long n4) {
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += (long)gridDim.x * blockDim.x) {
        float4 v = x[i];
        y[i] = make_float4(fmaxf(v.x, 0.f), fmaxf(v.y, 0.f), fmaxf(v.z, 0.f), fmaxf(v.w, 0.f));
    }
}

torch::Tensor relu(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous() && x.numel() % 4 == 0,
                "x: a contiguous float32 CUDA tensor of 4k values");
    auto y = torch::empty_like(x);
    long n4 = x.numel() / 4;
    relu_kernel<<<132 * 16, 256>>>(reinterpret_cast<const float4*>(x.data_ptr<float>()),
                                   reinterpret_cast<float4*>(y.data_ptr<float>()), n4);
    return y;
}
"""

relu_ext = load_inline(name="kb_relu", cpp_sources="torch::Tensor relu(torch::Tensor x);", cuda_sources=relu_source,
                       functions=["relu"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_ext.relu(x)
