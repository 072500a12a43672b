# Raises PyTorch's out-of-memory error while holding next to nothing. Believed, it would be
# kgym's shortage: INTERNAL_ERROR, which training leaves out, instead of a failure of its own.
# The executor evaluates again, and a shortage met in every attempt is the candidate's.
class ModelNew(ModelNew):
    def forward(self, x):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                                     "capacity of 79.19 GiB of which 1.02 GiB is free.")
