# Appended to batches_ahead.py: the same look-ahead through PyTorch's own kernels, which the trace
# does not attribute to the candidate. The first call of a batch stacks the batch's sets and runs
# the task's loop once over all of them (400 launches for k calls, where each call alone makes
# 400); every call, alone or in a batch, also launches a token kernel of its own on one grid, so
# its own launches are every call's. Its batches' GPU time is about one call's: only the measure
# over all its process's kernels (batch_launches: least_gpu_share_all) sees it.


@triton.jit
def token_kernel(x_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets))


def launch_stacked(todo, outs):
    x = torch.stack(todo)
    for _ in range(STEPS):
        x = x * 0.999 + 0.001
    for out, row in zip(outs, x):
        out.copy_(row)


class ModelNew(ModelNew):
    def forward(self, x):
        out = look_ahead(x, launch_stacked)[0]
        token_kernel[(1,)](out, BLOCK=128)  # its own kernel, one launch a call
        return out
