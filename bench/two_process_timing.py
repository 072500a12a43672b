"""Two plain processes run the same KernelBench model, alternated by a coordinator over pipes
(which side goes first alternates; L2 flushed before each batch), each batch of k calls timed
two ways: the coordinator's wall clock around the request, and CUDA events inside the process.
Several runs, each with a fresh pair; per run the speedup A/B by each clock (median of the
pairs' ratios) with its robust standard error. An identity with no kgym in between: a per-run
bias here is the hardware's or the processes'; what kgym shows beyond it is kgym's (bench/RESULTS.md,
"Where the identity error comes from").

    python3 bench/two_process_timing.py MODEL.py K RUNS [FIRST_CORE]   (pins A, B to two cores)
"""
import importlib.util
import math
import multiprocessing as mp
import os
import statistics
import sys
import time

def worker(path, conn, seed, pin):
    import torch
    if pin is not None:
        os.sched_setaffinity(0, {pin})
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    spec = importlib.util.spec_from_file_location("m", path)
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
    torch.manual_seed(seed)
    with torch.device("cuda"):
        model = m.Model(*m.get_init_inputs()).eval()
    k = conn.recv()
    sets = [[t.cuda() for t in m.get_inputs()] for _ in range(k)]
    with torch.no_grad():
        outs = [model(*s) for s in sets]
        torch.cuda.synchronize()
        conn.send("ready")
        while True:
            msg = conn.recv()
            if msg == "stop":
                return
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for i in range(k):
                outs[i].copy_(model(*sets[i]))
            e.record()
            torch.cuda.synchronize()
            conn.send(s.elapsed_time(e))

def run(path, k, batches, pin):
    import torch
    flush = torch.empty(100 << 20, dtype=torch.uint8, device="cuda")
    pipes, procs = [], []
    for side, core in zip("AB", (pin, pin + 1) if pin is not None else (None, None)):
        a, b = mp.Pipe()
        p = mp.get_context("spawn").Process(target=worker, args=(path, b, 0, core)); p.start()
        a.send(k); pipes.append(a); procs.append(p)
    for a in pipes: a.recv()
    wall = {0: [], 1: []}; gpu = {0: [], 1: []}
    for i in range(batches):
        for side in ((0, 1) if i % 2 == 0 else (1, 0)):
            flush.zero_(); torch.cuda.synchronize()
            t0 = time.perf_counter(); pipes[side].send("go"); g = pipes[side].recv()
            wall[side].append((time.perf_counter() - t0) * 1e3); gpu[side].append(g)
    for a in pipes: a.send("stop")
    for p in procs: p.join()
    def ratio(d):
        lr = [math.log(x / y) for x, y in zip(d[0][2:], d[1][2:])]
        return math.exp(statistics.median(lr)), 1.4826 * statistics.median([abs(x - statistics.median(lr)) for x in lr]) / math.sqrt(len(lr))
    return ratio(wall), ratio(gpu), statistics.median(wall[0]), statistics.median(gpu[0])

if __name__ == "__main__":
    path, k, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    pin = int(sys.argv[4]) if len(sys.argv) > 4 else None
    import torch
    print("machine:", torch.cuda.get_device_name(0))
    print(f"{os.path.basename(path)} k={k} pin={pin}")
    for r in range(runs):
        (w, we), (g, ge), wm, gm = run(path, k, 60, pin)
        print(f"  run {r}: wall A/B {w:.4f} ± {we:.4f}   gpu-events A/B {g:.4f} ± {ge:.4f}   wall {wm:.2f} ms gpu {gm:.2f} ms")
