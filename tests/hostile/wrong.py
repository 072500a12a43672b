class ModelNew(ModelNew):
    def forward(self, x):
        return gelu_scale_residual(x, self.scale * 1.5)
