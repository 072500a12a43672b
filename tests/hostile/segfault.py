import ctypes


class ModelNew(ModelNew):
    def forward(self, x):
        ctypes.string_at(0)  # reads address 0: SIGSEGV
        return gelu_scale_residual(x, self.scale)
