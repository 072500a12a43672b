"""Every KernelBench problem of the given levels judged with its own reference as the answer.

Each problem's Model, renamed ModelNew, is correct by definition and exactly as fast as the
reference, so every verdict should be OK with a speedup of 1. Runs the problems through one
`kgym check` process per level (one executor, its sandbox kept warm, as a user would), streams
progress, and prints per level: verdict counts, every problem not OK with its message, the
slowest and most memory-hungry problems, identity speedups and evaluations per hour. Every
ExecResult goes to --out (JSON lines) for plotting.

    python3 bench/kernelbench_sweep.py --kernelbench ../shared/kernelbench --level 1 --level 2 --level 3

Not yet: KernelBench's own harness side by side (--baseline), and the run through `kgym serve`.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter

import kernelbench_tasks

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def sweep_level(kgym: str, tasks: list, level: int, args, out) -> list:
    """One kgym check over all `tasks`; returns the ExecResults in order, printing progress
    and writing each to `out` as it comes (a run cut short keeps what it measured)."""
    command = [kgym, "check", "--device", args.device, "--json", "--no-hacking-check", "--candidate", "identity",
               "--precision", args.precision]
    for task in tasks:
        command += ["--task", task]
    results, started = [], time.monotonic()
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as process:
        for line in process.stdout:
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            results.append(r)
            if out:
                out.write(json.dumps({"level": level, **r}) + "\n")
                out.flush()
            print(f"  [{len(results)}/{len(tasks)} {time.monotonic() - started:6.0f} s] {r.get('task_id', '?')[:50]:50s} "
                  f"{r.get('verdict', '?'):15s} {r.get('wall_s', 0):6.1f} s {r.get('peak_device_memory_mb', 0) / 1024:6.1f} GiB "
                  f"speedup {r.get('speedup', 0):.4f}", file=sys.stderr, flush=True)
    return results


def report(level: int, results: list, elapsed_s: float) -> None:
    counts = Counter(r.get("verdict", "?") for r in results)
    print(f"\nlevel {level}: {len(results)} problems, " + ", ".join(f"{v} {n}" for v, n in counts.most_common()) +
          f"; {elapsed_s:.0f} s, {3600 * len(results) / max(elapsed_s, 1e-9):.0f} evaluations/hour")
    ok = [r for r in results if r.get("verdict") == "OK"]
    if ok:
        deviation = [abs(r.get("speedup", 0) - 1) for r in ok]
        print(f"  identity |speedup - 1| over the OK: mean {statistics.fmean(deviation):.4f}, max {max(deviation):.4f}")
    for r in results:
        if r.get("verdict") != "OK":
            print(f"  not OK: {r.get('task_id')}: {r.get('verdict')} ({r.get('failed_phase', '')}) "
                  f"{r.get('message', '')[:240]}")
    print("  slowest: " + ", ".join(f"{r.get('task_id')} {r.get('wall_s', 0):.1f} s"
                                    for r in sorted(results, key=lambda r: -r.get("wall_s", 0))[:5]))
    print("  most GPU memory: " + ", ".join(f"{r.get('task_id')} {r.get('peak_device_memory_mb', 0) / 1024:.1f} GiB"
                                           for r in sorted(results, key=lambda r: -r.get("peak_device_memory_mb", 0))[:5]))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernelbench", required=True, help="a KernelBench checkout (e.g. ../shared/kernelbench)")
    parser.add_argument("--level", type=int, action="append", required=True, help="1, 2 or 3; repeat for several")
    parser.add_argument("--only", help="problem numbers of each level, e.g. 1,5,40 (default: all)")
    parser.add_argument("--kgym", default=os.path.join(ROOT, "build", "kgym"))
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cuda")
    parser.add_argument("--precision", choices=["fp32", "fp16", "bf16"], default="fp32")
    parser.add_argument("--out", help="write every ExecResult here (JSON lines)")
    args = parser.parse_args()
    only = {int(n) for n in args.only.split(",")} if args.only else None
    out = open(args.out, "w") if args.out else None
    machine = None
    with tempfile.TemporaryDirectory() as workdir:
        for level in args.level:
            problems = [p for p in kernelbench_tasks.problems(args.kernelbench, level)
                        if only is None or int(os.path.basename(p).split("_")[0]) in only]
            tasks = [kernelbench_tasks.identity_task(p, level, workdir) for p in problems]
            print(f"level {level}: {len(tasks)} problems", file=sys.stderr, flush=True)
            started = time.monotonic()
            results = sweep_level(args.kgym, tasks, level, args, out)
            elapsed = time.monotonic() - started
            machine = machine or next((r["device_name"] for r in results if r.get("device_name")), None)
            missing = len(tasks) - len(results)
            report(level, results, elapsed)
            if missing:
                print(f"  {missing} problems got no result (kgym check stopped early)")
    print(f"\nmachine: {machine or 'unknown'}; precision {args.precision}; identity answers through {args.kgym}")


if __name__ == "__main__":
    main()
