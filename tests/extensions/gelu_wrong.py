# A CUDA candidate that builds and runs but computes a wrong GELU (tanh(x) for erf(x/sqrt 2)):
# INCORRECT on the GPU.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void gelu_scale_residual_kernel(const float* __restrict__ x, float* __restrict__ y, float scale,
                                           long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        float g = 0.5f * v * (1.0f + tanhf(v));  // wrong: tanh(x), not erf(x/sqrt 2)
        y[i] = g * scale + v;
    }
}

torch::Tensor gelu_scale_residual(torch::Tensor x, double scale) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "x must be a float32 CUDA tensor");
    auto input = x.contiguous();
    auto y = torch::empty_like(input);
    long n = input.numel();
    int threads = 256;
    gelu_scale_residual_kernel<<<(n + threads - 1) / threads, threads>>>(
        input.data_ptr<float>(), y.data_ptr<float>(), (float)scale, n);
    return y;
}
"""

cpp_source = "torch::Tensor gelu_scale_residual(torch::Tensor x, double scale);"

gelu_ext = load_inline(name="gelu_wrong_ext", cpp_sources=cpp_source, cuda_sources=cuda_source,
                       functions=["gelu_scale_residual"], verbose=False, extra_cflags=["-O3"],
                       extra_cuda_cflags=["-O3"], extra_ldflags=[""])


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return gelu_ext.gelu_scale_residual(x, self.scale)
