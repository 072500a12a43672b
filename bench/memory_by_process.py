"""Who holds the GPU's memory while a command runs: NVML's per-process use, every 10 ms.

Runs the command (anything: a KernelBench sweep, `kgym check --device cuda ...`), polls
NVML for the device's memory in use and each process's share, and prints the peak with every
process's share at that instant, then one line a second (the total and each process's MiB, by
pid). kgym's evaluation is three processes (the judge, the reference runner, the candidate's),
and three more are prepared for the next one; the shared buffers the judge makes (inputs,
output slots) count in the judge's line, each runner's own allocations (its model's
intermediates and outputs) in its own. KernelBench's harness, run by the command, is one.
Needs nvidia-ml-py (deploy/requirements-sandbox.txt) and a GPU.

    python3 bench/memory_by_process.py --out /tmp/l1_47.jsonl -- python3 bench/kernelbench_sweep.py \\
        --kernelbench ../shared/kernelbench --level 1 --only 47 --baseline
"""
import argparse
import json
import subprocess
import sys
import time


def peak_line(samples: list) -> str:
    """The sample of most memory in use: its time, total and each process's share, largest first."""
    t, used, procs = max(samples, key=lambda s: s[1])
    shares = ", ".join(f"{pid}:{mb}" for pid, mb in sorted(procs.items(), key=lambda kv: -kv[1]))
    return f"peak {used} MiB in use at {t:.2f} s; by process (pid:MiB): {shares}"


def per_second(samples: list) -> list:
    """The first sample of every second, as lines: time, total, each process's MiB by pid."""
    lines, last = [], -1
    for t, used, procs in samples:
        if int(t) != last:
            last = int(t)
            lines.append(f"  {t:7.2f} s {used:7d} MiB  " + " ".join(f"{pid}:{mb}" for pid, mb in sorted(procs.items())))
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", help="every sample here (JSON lines: seconds, MiB in use, {pid: MiB})")
    parser.add_argument("--gpu", type=int, default=0, help="NVML's index of the GPU to watch (default 0)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    import pynvml
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(args.gpu)
    print(f"machine: {pynvml.nvmlDeviceGetName(handle)}, {pynvml.nvmlDeviceGetMemoryInfo(handle).total >> 20} MiB",
          flush=True)
    started, samples = time.monotonic(), []
    process = subprocess.Popen(command)
    while process.poll() is None:
        try:
            procs = {p.pid: (p.usedGpuMemory or 0) >> 20 for p in pynvml.nvmlDeviceGetComputeRunningProcesses(handle)}
            used = pynvml.nvmlDeviceGetMemoryInfo(handle).used >> 20
        except pynvml.NVMLError:  # a process listed as it exits
            continue
        samples.append((round(time.monotonic() - started, 3), used, procs))
        time.sleep(0.01)
    if args.out:
        with open(args.out, "w") as out:
            out.writelines(json.dumps(s) + "\n" for s in samples)
    if samples:
        print(peak_line(samples))
        print("\n".join(per_second(samples)))
    return process.returncode


if __name__ == "__main__":
    sys.exit(main())
