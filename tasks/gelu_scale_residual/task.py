import torch
import torch.nn as nn

# y = gelu(x) * scale + x : an elementwise chain (KernelBench level 1/2 style).
batch_size = 8192
dim = 8192


class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.nn.functional.gelu(x) * self.scale + x


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [0.5]
