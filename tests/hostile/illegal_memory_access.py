# GPU only: a kernel that reads far outside its input (a sticky CUDA error).
@triton.jit
def wild_read_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets + (1 << 40)), mask=offsets < n)


class ModelNew(ModelNew):
    def forward(self, x):
        out = torch.empty_like(x)
        wild_read_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        torch.cuda.synchronize()
        return out
