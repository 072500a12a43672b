# Honest, but it keeps every input tensor it is handed, so the judge's shared buffers stay mapped in
# its process after the judge has told it to let go of them (RemoteCandidate.drop_inputs: the
# trials' one-set arena before the timing's larger one). The memory then stays allocated until its
# process ends, counted as the judge's (NVML names the process that made it); it can keep only what
# it was handed, one arena each time the sets change layout or number, a few an evaluation. The
# evaluation must go on beside them and the verdict stay OK.
KEPT = {}


class ModelNew(ModelNew):
    def forward(self, x):
        KEPT.setdefault((x.data_ptr(), tuple(x.shape)), x)
        return super().forward(x)
