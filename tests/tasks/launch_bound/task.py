import torch
import torch.nn as nn

# Launch-bound on purpose: 400 tiny element-wise kernels a call, so a call's time is its
# host side's (the dispatch of each kernel), not the GPU's. What busy work on the reference's
# core would move (tests/hostile/contends_cpu.py).
size = 4096
steps = 200


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        for _ in range(steps):
            x = x * 0.999 + 0.001
        return x


def get_inputs():
    return [torch.randn(size)]


def get_init_inputs():
    return []
