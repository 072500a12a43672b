# GPU: fools the Python-level launch record (it reports a launch of its own kernel that never
# happened) and lets PyTorch do the work. Only the CUPTI trace can tell.
import gc

from kgym_sandbox.launches import LaunchRecorder


class ModelNew(ModelNew):
    def forward(self, x):
        for recorder in (o for o in gc.get_objects() if isinstance(o, LaunchRecorder)):
            recorder.note(gelu_scale_residual_kernel, False)
        return torch.nn.functional.gelu(x) * self.scale + x
