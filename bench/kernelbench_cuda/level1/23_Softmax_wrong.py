# KernelBench level 1, problem 23, answered wrong on purpose: exp(x) divided by the number of
# columns instead of by the row's sum of exponentials (no reduction at all). Must be INCORRECT.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>

__global__ void exp_over_cols_kernel(const float* __restrict__ x, float* __restrict__ y, long n, long cols) {
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        y[i] = __expf(x[i]) / (float)cols;
}

torch::Tensor softmax_rows(torch::Tensor x) {
    auto input = x.contiguous();
    auto y = torch::empty_like(input);
    exp_over_cols_kernel<<<132 * 16, 256>>>(input.data_ptr<float>(), y.data_ptr<float>(), input.numel(),
                                            input.size(1));
    return y;
}
"""

wrong_ext = load_inline(name="kb_softmax_wrong", cpp_sources="torch::Tensor softmax_rows(torch::Tensor x);",
                        cuda_sources=source, functions=["softmax_rows"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return wrong_ext.softmax_rows(x)
