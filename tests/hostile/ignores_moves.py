# Honest, but it keeps its placement where the judge redraws placements (EvalOptions.placement):
# the judge's move gives back what this process's allocator caches and holds a pad, so that its
# next intermediates lie elsewhere; with torch.cuda.empty_cache made a no-op here nothing is given
# back, and its intermediates stay where its first calls put them. Each side's time comes from its
# own fast mode, so a placement kept gains it nothing: it must stay OK at its honest speedup.
import torch

torch.cuda.empty_cache = lambda: None
