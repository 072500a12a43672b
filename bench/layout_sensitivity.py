"""Does where the buffers lie change a model's time? One process, one KernelBench model;
layouts differ only by a pad of 0-4 GiB allocated before the inputs, outputs and (after
empty_cache) the forward's intermediates; the layouts are timed in shuffled rounds by CUDA
events, L2 flushed before each. Prints each layout's time relative to layout 0 (geometric mean
of the rounds' ratios, with its standard error). One of the causes of the identity bias ruled
out in bench/RESULTS.md ("Where the identity error comes from").

    python3 bench/layout_sensitivity.py KERNELBENCH/KernelBench/level2/1_Conv2D_ReLU_BiasAdd.py ...
"""
import importlib.util
import math
import random
import statistics
import sys
import time

import torch
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False

def load(path):
    spec = importlib.util.spec_from_file_location("m", path)
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); return m

def main(path, layouts=4, rounds=12):
    m = load(path)
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = m.Model(*m.get_init_inputs()).cuda().eval()
        base = [t.cuda() if isinstance(t, torch.Tensor) else t for t in m.get_inputs()]
    flush = torch.empty(100 << 20, dtype=torch.uint8, device="cuda")
    pads = [0] + [random.randint(1, 4000) << 20 for _ in range(layouts - 1)]
    with torch.no_grad():
        model(*base)  # first call: kernels loaded, library heuristics
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(3):
            model(*base)
        torch.cuda.synchronize()
        call = (time.perf_counter() - t0) / 3
    k = max(1, min(16, int(0.03 / call)))
    times = {l: [] for l in range(layouts)}
    with torch.no_grad():
        for r in range(rounds):
            order = list(range(layouts))
            random.shuffle(order)
            for l in order:
                torch.cuda.empty_cache()  # the intermediates too get new places
                pad = torch.empty(pads[l], dtype=torch.uint8, device="cuda") if pads[l] else None
                inputs = [t.clone() if isinstance(t, torch.Tensor) else t for t in base]
                out = torch.empty_like(model(*inputs))
                torch.cuda.synchronize()
                flush.zero_()
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                for _ in range(k):
                    out.copy_(model(*inputs))
                e.record()
                e.synchronize()
                times[l].append(s.elapsed_time(e) / k)
                del inputs, out, pad
    ref = times[0]
    print(f"{path.split('/')[-1][:40]:40s} call {call*1e3:7.2f} ms k={k}")
    for l in range(layouts):
        ratios = [math.log(a / b) for a, b in zip(times[l], ref)]
        se = statistics.stdev(ratios) / math.sqrt(len(ratios)) if l else 0
        print(f"  layout {l} pad {pads[l]>>20:5d} MiB  median {statistics.median(times[l]):8.3f} ms  "
              f"vs 0: {math.exp(statistics.fmean(ratios)):.4f} ± {se:.4f}")


if __name__ == "__main__":
    print("machine:", torch.cuda.get_device_name(0))
    for p in sys.argv[1:]:
        main(p)
        torch.cuda.empty_cache()
