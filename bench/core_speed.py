"""How fast each core runs a launch-bound loop, and how fast each fresh process does.

A launch-bound model's time is its host side's: the Python and PyTorch dispatch that issues
its small kernels. The judge times the candidate's process and the reference runner on cores
of their own (zygote.timing_cores), so if cores differ in speed (a virtual machine's vCPUs
share physical cores with other work), or fresh processes do (address-space layout), the
identity answer's speedup moves with them. This separates the two:

- cores: one process moves from core to core (rounds in a fresh random order each), timing
  a fixed loop of tiny launches on each; a spread between cores is the cores';
- processes: several fresh processes one after the other, all on one core, each timing the
  same loop; a spread between them is the processes'. The same again with the address-space
  layout fixed (`setarch -R`, PYTHONHASHSEED=0), and with processes forked from this one (as
  the sandbox's zygote forks its runners): which of a process's birthrights makes it fast;
- streams (GPU): one process, the loop on several streams of its own, each its own hardware
  queue: a spread between them is the queues'.

Each figure is the median over rounds of microseconds per launch (a tiny element-wise
kernel on the GPU, or the same op on a CPU tensor where there is none: the dispatcher alone).

    python3 bench/core_speed.py [--rounds 7] [--processes 6] [--launches 2000] [--copy]
"""
import argparse
import os
import random
import statistics
import subprocess
import sys
import time


def launch_loop_us(torch, device: str, launches: int, copy: bool = False) -> float:
    """With `copy`, each step also copies a scalar from pageable host memory, which waits for
    the device (as `torch.tensor(0.0, device=...)` in a forward does)."""
    x = torch.zeros(1, device=device)

    def step():
        x.add_(torch.tensor(1.0, device=device) if copy else 1.0)
    for _ in range(50):
        step()
    if device == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(launches):
        step()
    if device == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e6 / launches


def spread(medians: list) -> float:
    """(slowest - fastest) / fastest."""
    return (max(medians) - min(medians)) / min(medians)


def per_core(torch, device: str, cores: list, rounds: int, launches: int, copy: bool) -> dict:
    times = {c: [] for c in cores}
    for _ in range(rounds):
        for core in random.sample(cores, len(cores)):
            os.sched_setaffinity(0, {core})
            times[core].append(launch_loop_us(torch, device, launches, copy))
    return {c: statistics.median(t) for c, t in times.items()}


def one_process(core: int, device: str, rounds: int, launches: int, copy: bool, fixed_layout: bool = False) -> float:
    """A fresh interpreter on `core`: its median over `rounds`."""
    code = (f"import os, statistics, sys; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r}); "
            f"os.sched_setaffinity(0, {{{core}}}); import torch, core_speed; "
            f"print(statistics.median(core_speed.launch_loop_us(torch, {device!r}, {launches}, {copy}) "
            f"for _ in range({rounds})))")
    command, env = [sys.executable, "-c", code], None
    if fixed_layout:
        command, env = ["setarch", "-R"] + command, {**os.environ, "PYTHONHASHSEED": "0"}
    return float(subprocess.run(command, capture_output=True, text=True, check=True, env=env).stdout)


def interleaved_processes(core: int, device: str, rounds: int, launches: int, copy: bool, count: int) -> list:
    """`count` fresh interpreters alive together on `core`, timed in turn (a fresh random order
    each round): unlike `one_process` one after the other, a drift of the machine over time
    falls on all of them alike, so what spreads them is theirs. Each one's median."""
    code = (f"import os, sys; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r}); "
            f"os.sched_setaffinity(0, {{{core}}}); import torch, core_speed\n"
            f"for line in sys.stdin:\n"
            f"    print(core_speed.launch_loop_us(torch, {device!r}, {launches}, {copy}), flush=True)")
    children = [subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 text=True) for _ in range(count)]

    def time_one(child) -> float:
        child.stdin.write("go\n")
        child.stdin.flush()
        return float(child.stdout.readline())
    for child in children:  # each starts CUDA and warms up before any round counts
        time_one(child)
    times = [[] for _ in children]
    for _ in range(rounds):
        for i in random.sample(range(count), count):
            times[i].append(time_one(children[i]))
    for child in children:
        child.stdin.close()
        child.wait()
    return [statistics.median(t) for t in times]


def forked_process(torch, core: int, device: str, rounds: int, launches: int, copy: bool) -> float:
    """A child forked from this process (which has not touched CUDA) on `core`: its median."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        os.sched_setaffinity(0, {core})
        median = statistics.median(launch_loop_us(torch, device, launches, copy) for _ in range(rounds))
        os.write(write_end, repr(median).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        median = float(pipe.read())
    os.waitpid(pid, 0)
    return median


def per_stream(torch, rounds: int, launches: int, copy: bool, streams: int) -> list:
    """One process, the loop on each of `streams` streams in turn: each stream's median."""
    made = [torch.cuda.Stream() for _ in range(streams)]
    times = [[] for _ in made]
    for _ in range(rounds):
        for i in random.sample(range(streams), streams):
            with torch.cuda.stream(made[i]):
                times[i].append(launch_loop_us(torch, "cuda", launches, copy))
    return [statistics.median(t) for t in times]


def print_table(title: str, figures: list) -> None:
    print(f"| {title} | us per launch |")
    print("|---|---|")
    for i, us in enumerate(figures):
        print(f"| {i} | {us:.3f} |")
    print(f"{title}: spread {spread(figures):.4f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--processes", type=int, default=6)
    parser.add_argument("--launches", type=int, default=2000)
    parser.add_argument("--device", choices=["cpu", "cuda"])
    parser.add_argument("--copy", action="store_true", help="each step also copies a scalar from pageable memory")
    args = parser.parse_args()
    import torch
    # not torch.cuda.is_available(): it initialises CUDA here, and the forked processes could not
    device = args.device or ("cuda" if os.path.exists("/dev/nvidia0") else "cpu")
    cores = sorted(os.sched_getaffinity(0))
    print(f"machine: {os.cpu_count()} cores ({len(cores)} allowed); {args.launches} launches a loop on {device}"
          f"{' with a pageable copy each' if args.copy else ''}, "
          f"median of {args.rounds} rounds")
    core = cores[-1]  # processes first: forking needs CUDA untouched here
    print_table(f"fresh process on core {core}",
                [one_process(core, device, args.rounds, args.launches, args.copy) for _ in range(args.processes)])
    print_table(f"fresh processes alive together, timed in turn, on core {core}",
                interleaved_processes(core, device, args.rounds, args.launches, args.copy, args.processes))
    print_table(f"fresh process, layout fixed, on core {core}",
                [one_process(core, device, args.rounds, args.launches, args.copy, True) for _ in range(args.processes)])
    print_table(f"forked process on core {core}",
                [forked_process(torch, core, device, args.rounds, args.launches, args.copy) for _ in range(args.processes)])
    by_core = per_core(torch, device, cores, args.rounds, args.launches, args.copy)
    if device == "cuda":  # only now: CUDA in this process before the forks would break them
        print(f"device: {torch.cuda.get_device_name(0)}")
    os.sched_setaffinity(0, set(cores))
    print("| core | us per launch |")
    print("|---|---|")
    for each, us in by_core.items():
        print(f"| {each} | {us:.3f} |")
    print(f"cores: spread {spread(list(by_core.values())):.4f} (slowest over fastest - 1)")
    if device == "cuda":
        os.sched_setaffinity(0, {core})
        print_table(f"stream of one process on core {core}", per_stream(torch, args.rounds, args.launches, args.copy, 8))


if __name__ == "__main__":
    main()
