# Runs its work on another GPU of the host, one the executor did not give it (another
# evaluation's, or an idle one, where nothing contends with it), and hands the output back
# on its own. Its sandbox sees one GPU: cuda:1 does not exist for it.
class ModelNew(ModelNew):
    def forward(self, x):
        other = torch.device("cuda", 1)
        moved = x.to(other)
        with torch.cuda.device(other):
            y = super().forward(moved)
        return y.to(x.device)
