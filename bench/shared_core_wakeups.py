"""Does an idle trusted process on the timing core slow the candidate's calls there?

kgym's candidate process and reference runner share one timing core, the candidate's threads at
nice 19 and every thread of the reference runner at nice -20 (isolation.py). While the
candidate is timed the reference runner waits for its next request; if any of its threads
(CUDA's, CUPTI's, PyTorch's) wakes meanwhile, it takes the core from the candidate at once,
and the reverse never happens. This measures a launch-bound loop (tests/tasks/launch_bound's:
200 tiny kernels a call) pinned to one core at nice 19, alone and with an idle CUDA process on
that core at nice -20 (a reference runner's stand-in: CUDA and cuDNN started, then waiting on a
pipe), in alternating rounds; and how much CPU the idle process used meanwhile.

    sudo python3 bench/shared_core_wakeups.py [--core 3] [--rounds 3] [--calls 200] [--cupti build/libkgym_cupti.so]

Needs a GPU and root (nice -20). Prints a table and the machine.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

import torch

IDLE_PEER = r"""
import os, sys, torch
torch.nn.functional.conv2d(torch.ones(1, 1, 4, 4, device="cuda"), torch.ones(1, 1, 3, 3, device="cuda"))
torch.cuda.synchronize()
print(len(os.listdir("/proc/self/task")), flush=True)
sys.stdin.read()
"""


def cpu_ticks(pid: int) -> int:
    """utime + stime of every thread of `pid` (clock ticks)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def launch_bound_calls(calls: int, steps: int = 200) -> list:
    """Each call's time (ms, host clock, synchronized): `steps` tiny kernels."""
    x0 = torch.randn(4096, device="cuda")
    times = []
    for _ in range(calls):
        torch.cuda.synchronize()
        start = time.perf_counter()
        x = x0
        for _ in range(steps):
            x = x * 0.999 + 0.001
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3)
    return times


def start_peer(core: int, cupti: str) -> subprocess.Popen:
    def confine():
        os.sched_setaffinity(0, {core})
        os.setpriority(os.PRIO_PROCESS, 0, -20)
    env = dict(os.environ, CUDA_INJECTION64_PATH=cupti) if cupti else None
    peer = subprocess.Popen([sys.executable, "-c", IDLE_PEER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, preexec_fn=confine, env=env)
    peer.threads = int(peer.stdout.readline())
    return peer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--core", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--cupti", default="", help="the peer with this CUPTI injection library (build/libkgym_cupti.so)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("shared_core_wakeups: needs a CUDA GPU (this machine has none)")
    os.sched_setaffinity(0, {args.core})
    os.setpriority(os.PRIO_PROCESS, 0, 19)
    launch_bound_calls(20)  # warm
    rows = []
    for round_ in range(args.rounds):
        for with_peer in (False, True):
            peer = start_peer(args.core, args.cupti) if with_peer else None
            before = cpu_ticks(peer.pid) if peer else 0
            times = launch_bound_calls(args.calls)
            used = (cpu_ticks(peer.pid) - before) / os.sysconf("SC_CLK_TCK") * 1e3 if peer else 0.0
            if peer:
                peer.stdin.close()
                peer.wait()
            rows.append((round_, with_peer, statistics.median(times), max(times), used, peer.threads if peer else 0))
    print(f"machine: {torch.cuda.get_device_name(0)}, {os.cpu_count()} cores; core {args.core}, "
          f"{args.calls} calls of 200 kernels a round")
    print("| round | idle CUDA peer at nice -20 | median ms | slowest ms | peer's CPU ms meanwhile | peer's threads |")
    print("|---|---|---|---|---|---|")
    for round_, with_peer, median, slowest, used, threads in rows:
        print(f"| {round_} | {'yes' if with_peer else 'no'} | {median:.3f} | {slowest:.3f} | {used:.0f} | {threads} |")
    alone = [r[2] for r in rows if not r[1]]
    beside = [r[2] for r in rows if r[1]]
    print("median call with the peer / alone, by round: " +
          ", ".join(f"{b / a:.4f}" for a, b in zip(alone, beside)))


if __name__ == "__main__":
    main()
