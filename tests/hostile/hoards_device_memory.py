# Takes all of the GPU's memory but a sliver in its own process on its first call, keeps it,
# and answers right every time: the judge's own allocations fail next (its timing buffers, its
# reference's outputs). The shortage is the candidate's doing (RESOURCE_LIMIT), not kgym's
# own, although no allocation of the candidate's ever failed (device_memory.py: what the
# candidate's side holds when kgym's allocation fails).
class ModelNew(ModelNew):
    def forward(self, x):
        if not hasattr(self, "hoard"):
            self.hoard, chunk = [], 1 << 30
            while chunk >= 1 << 20:
                try:
                    self.hoard.append(torch.empty(chunk, dtype=torch.uint8, device=x.device))
                except torch.OutOfMemoryError:
                    chunk //= 2
        return super().forward(x)
