import torch
import torch.nn as nn

# A small conv chain (KernelBench level 2 style): conv 3x3, add a bias, ReLU, scale.
batch_size = 64
in_channels = 64
out_channels = 128
height = 128
width = 128


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, scale):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1, bias=False)
        self.bias = nn.Parameter(torch.randn(out_channels, 1, 1) * 0.1)
        self.scale = scale

    def forward(self, x):
        return torch.relu(self.conv(x) + self.bias) * self.scale


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, 0.5]
