# Cheating: writes the result into the input and returns it (aliasing).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(dim) + 0.5)
        self.eps = eps

    def forward(self, x):
        return x.mul_(torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)).mul_(self.weight)
