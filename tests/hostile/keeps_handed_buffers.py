# Honest, but it keeps every input tensor it is handed, so whatever shared buffer the judge lets go
# of stays mapped in its process. The judge adds buffers when it needs more (the timing's k sets
# beside the trials' one) and lets go of them only for another layout, which a task's fixed shapes
# never have (RemoteCandidate.fill_sets): what it keeps is what it uses anyway. Until the
# thirty-seventh session the trials' arena was replaced by the timing's, and a process keeping it
# held one set more than it was using, counted as the judge's (NVML names the process that made
# it): towards kgym's own shortage, never the candidate's. The verdict must stay OK.
KEPT = {}


class ModelNew(ModelNew):
    def forward(self, x):
        KEPT.setdefault((x.data_ptr(), tuple(x.shape)), x)
        return super().forward(x)
