import torch
import torch.nn as nn

# RMSNorm: x / sqrt(mean(x^2) + eps) * weight.
batch_size = 8192
dim = 8192


class Model(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(dim) + 0.5)
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim, 1e-6]
