# The reference itself (ModelNew = Model): used to measure the harness (speedup should be 1).
# It runs no kernel of its own, so its verdict is HACKED unless the hacking check is off.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, scale):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1, bias=False)
        self.bias = nn.Parameter(torch.randn(out_channels, 1, 1) * 0.1)
        self.scale = scale

    def forward(self, x):
        return torch.relu(self.conv(x) + self.bias) * self.scale
