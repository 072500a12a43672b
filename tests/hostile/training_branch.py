class ModelNew(ModelNew):
    def forward(self, x):
        if self.training:
            return torch.nn.functional.gelu(x) * self.scale + x
        return gelu_scale_residual(x, self.scale)
