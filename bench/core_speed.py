"""How fast each core runs a launch-bound loop, and how fast each fresh process does.

A launch-bound model's time is its host side's: the Python and PyTorch dispatch that issues
its small kernels. The judge times the candidate's process and the reference runner on cores
of their own (zygote.timing_cores), so if cores differ in speed (a virtual machine's vCPUs
share physical cores with other work), or fresh processes do (address-space layout), the
identity answer's speedup moves with them. This separates the two:

- cores: one process moves from core to core (rounds in a fresh random order each), timing
  a fixed loop of tiny launches on each; a spread between cores is the cores';
- processes: several fresh processes one after the other, all on one core, each timing the
  same loop; a spread between them is the processes'.

Each figure is the median over rounds of microseconds per launch (a tiny element-wise
kernel on the GPU, or the same op on a CPU tensor where there is none: the dispatcher alone).

    python3 bench/core_speed.py [--rounds 7] [--processes 6] [--launches 2000]
"""
import argparse
import os
import random
import statistics
import subprocess
import sys
import time


def launch_loop_us(torch, device: str, launches: int) -> float:
    x = torch.zeros(1, device=device)
    for _ in range(50):
        x.add_(1.0)
    if device == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(launches):
        x.add_(1.0)
    if device == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e6 / launches


def spread(medians: list) -> float:
    """(slowest - fastest) / fastest."""
    return (max(medians) - min(medians)) / min(medians)


def per_core(torch, device: str, cores: list, rounds: int, launches: int) -> dict:
    times = {c: [] for c in cores}
    for _ in range(rounds):
        for core in random.sample(cores, len(cores)):
            os.sched_setaffinity(0, {core})
            times[core].append(launch_loop_us(torch, device, launches))
    return {c: statistics.median(t) for c, t in times.items()}


def one_process(core: int, device: str, rounds: int, launches: int) -> float:
    """A fresh interpreter on `core`: its median over `rounds`."""
    code = (f"import os, statistics, sys; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r}); "
            f"os.sched_setaffinity(0, {{{core}}}); import torch, core_speed; "
            f"print(statistics.median(core_speed.launch_loop_us(torch, {device!r}, {launches}) "
            f"for _ in range({rounds})))")
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--processes", type=int, default=6)
    parser.add_argument("--launches", type=int, default=2000)
    parser.add_argument("--device", choices=["cpu", "cuda"])
    args = parser.parse_args()
    import torch
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    cores = sorted(os.sched_getaffinity(0))
    name = torch.cuda.get_device_name(0) if device == "cuda" else "cpu only"
    print(f"machine: {os.cpu_count()} cores ({len(cores)} allowed), {name}; {args.launches} launches a loop, "
          f"median of {args.rounds} rounds")
    by_core = per_core(torch, device, cores, args.rounds, args.launches)
    os.sched_setaffinity(0, set(cores))
    print("| core | us per launch |")
    print("|---|---|")
    for core, us in by_core.items():
        print(f"| {core} | {us:.3f} |")
    print(f"cores: spread {spread(list(by_core.values())):.4f} (slowest over fastest - 1)")
    core = cores[-1]
    procs = [one_process(core, device, args.rounds, args.launches) for _ in range(args.processes)]
    print(f"| process on core {core} | us per launch |")
    print("|---|---|")
    for i, us in enumerate(procs):
        print(f"| {i} | {us:.3f} |")
    print(f"processes: spread {spread(procs):.4f}")


if __name__ == "__main__":
    main()
