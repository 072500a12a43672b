class ModelNew(ModelNew):
    def forward(self, x):
        return gelu_scale_residual(x, self.scale, out=x)  # in place: the output is the input
