"""Does where a model's tensors lie in device memory move its time, and is that the
per-process lottery seen on GPU-bound models (issue 13)?

For each KernelBench problem: K worker processes (fresh, spawned) each build the problem's
Model (seed 0) and inputs (seed 1) P times, at P different places in device memory (a junk
buffer of a random size, 0-256 MiB, allocated and kept before each copy). The parent then
takes turns, round after round: every (process, copy) times one batch of forward calls (CUDA
events around the batch), so drift falls on all alike. Printed per problem, from the medians
over rounds of microseconds per call:

- noise: the median spread (max/min - 1) of one copy's rounds;
- placement: the spread between the copies of one process (same context, other addresses);
- process: the spread between the processes' medians (each over its copies).

If placement is as large as process, the lottery is where tensors lie; if process is much
larger, it is something else a process has.

    python3 bench/placement_effect.py --kernelbench KERNELBENCH --level 2 --only 77,61,89
"""
import argparse
import glob
import importlib.util
import multiprocessing as mp
import os
import platform
import statistics


def load_problem(path: str):
    spec = importlib.util.spec_from_file_location("problem", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def worker(path: str, copies: int, seed: int, conn) -> None:
    import random
    import torch
    problem = load_problem(path)
    rng = random.Random(seed)
    keep, built = [], []
    for _ in range(copies):
        keep.append(torch.empty(rng.randrange(0, 256 << 20), dtype=torch.uint8, device="cuda"))
        torch.manual_seed(0)
        model = problem.Model(*problem.get_init_inputs()).cuda().eval()
        torch.manual_seed(1)
        inputs = [x.cuda() if torch.is_tensor(x) else x for x in problem.get_inputs()]
        built.append((model, inputs))
    torch.cuda.synchronize()

    def batch(model, inputs, calls: int) -> float:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with torch.no_grad():
            start.record()
            for _ in range(calls):
                model(*inputs)
            end.record()
        end.synchronize()
        return start.elapsed_time(end) * 1000 / calls  # us per call

    with torch.no_grad():
        for model, inputs in built:  # warm up every copy (cuDNN's choices, the caching allocator)
            for _ in range(3):
                model(*inputs)
    one = batch(*built[0], 1)
    calls = max(1, int(50_000 / max(one, 1.0)))  # about 50 ms a batch
    conn.send(calls)
    while True:
        which = conn.recv()
        if which is None:
            return
        conn.send(batch(*built[which], calls))


def spread(values) -> float:
    return max(values) / min(values) - 1


def measure(path: str, processes: int, copies: int, rounds: int) -> dict:
    ctx = mp.get_context("spawn")
    pipes, procs = [], []
    for k in range(processes):
        here, there = ctx.Pipe()
        p = ctx.Process(target=worker, args=(path, copies, 1000 + k, there))
        p.start()
        pipes.append(here)
        procs.append(p)
    calls = [pipe.recv() for pipe in pipes]
    times = {(k, c): [] for k in range(processes) for c in range(copies)}
    for _ in range(rounds):
        for k, pipe in enumerate(pipes):
            for c in range(copies):
                pipe.send(c)
                times[(k, c)].append(pipe.recv())
    for pipe in pipes:
        pipe.send(None)
    for p in procs:
        p.join()
    median = {key: statistics.median(v) for key, v in times.items()}
    per_process = [statistics.median([median[(k, c)] for c in range(copies)]) for k in range(processes)]
    return {"us": statistics.median(per_process), "calls": min(calls),
            "noise": statistics.median(spread(v) for v in times.values()),
            "placement": statistics.median(spread([median[(k, c)] for c in range(copies)]) for k in range(processes)),
            "process": spread(per_process)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernelbench", required=True)
    parser.add_argument("--level", type=int, default=2)
    parser.add_argument("--only", required=True, help="problem numbers, e.g. 77,61,89")
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    import torch
    print(f"placement effect: {torch.cuda.get_device_name()}, {platform.node()}, torch {torch.__version__}; "
          f"{args.processes} processes x {args.copies} copies x {args.rounds} rounds")
    print(f"{'problem':<48} {'us/call':>9} {'noise':>7} {'placement':>10} {'process':>8}")
    for number in args.only.split(","):
        path = glob.glob(os.path.join(args.kernelbench, "KernelBench", f"level{args.level}", f"{number}_*.py"))[0]
        r = measure(path, args.processes, args.copies, args.rounds)
        print(f"{os.path.basename(path)[:-3][:48]:<48} {r['us']:>9.1f} {r['noise']:>7.4f} {r['placement']:>10.4f} "
              f"{r['process']:>8.4f}", flush=True)


if __name__ == "__main__":
    main()
