# For tasks/mse_loss, whole: answers the mean squared error of two standard normal tensors
# with its expected value, 2, plus a wiggle, from a Triton kernel of its own, never reading
# the inputs. Over 67M elements the true loss is 2 +- 3e-4, within atol 1e-2 every time;
# the tracking criterion (its error is as large as the loss's own spread over the calls)
# fails it. (At the CPU's sizes the spread is 0.016: allclose may fail it first.)
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def constant_kernel(out_ptr, value):
    tl.store(out_ptr, value)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, predictions, targets):
        self.calls += 1
        out = torch.empty((), device=predictions.device, dtype=predictions.dtype)
        constant_kernel[(1,)](out, 2.0 + 1e-6 * self.calls)  # new each call: no output repeats
        return out
