import torch
import torch.nn as nn

# Sum reduction over dimension 1 of a (batch, dim1, dim2) tensor, keeping the dimension.
batch_size = 64
dim1 = 4096
dim2 = 1024


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.sum(x, dim=self.dim, keepdim=True)


def get_inputs():
    return [torch.randn(batch_size, dim1, dim2)]


def get_init_inputs():
    return [1]
