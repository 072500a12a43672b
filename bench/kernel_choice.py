"""Which kernels a KernelBench task's Model runs, and how fast, process by process and input
offset by input offset: is an identity answer's speedup far from 1 (the reference runner and the
candidate's process running the same Model at different speeds, each steady within its
evaluation) the library choosing other kernels in one process than in the other?

Each of --processes fresh processes (one after the other, the sandbox's numerics pinned, eval
mode as timed) builds the Model and one input set under fixed seeds, then for each input
offset (the input copied into a larger buffer at that many bytes in: the alignment a packed
set gives it) times --calls calls with CUDA events (median) and lists the kernels of one
profiled call that took at least 5% of its GPU time. Offsets are taken in a fresh random order
in every process: a choice made at the first call and kept would show as the first offset's.

    python3 bench/kernel_choice.py --kernelbench ../shared/kernelbench --level 2 --only 77 --processes 6
"""
import argparse
import glob
import json
import os
import platform
import random
import statistics
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def one_process(task_path: str, offsets: list, calls: int) -> dict:
    import torch
    sys.path.insert(0, os.path.join(ROOT, "gpu", "sandbox"))
    from kgym_sandbox import numerics
    numerics.pin()
    namespace = {}
    exec(compile(open(task_path).read(), task_path, "exec"), namespace)
    torch.manual_seed(1)
    with torch.device("cuda"):
        model = namespace["Model"](*namespace["get_init_inputs"]()).eval()
    torch.manual_seed(2)
    with torch.device("cuda"):
        inputs = namespace["get_inputs"]()
    found = {}
    order = list(offsets)
    random.shuffle(order)
    with torch.no_grad():
        for offset in order:
            placed = []
            for x in inputs:
                if isinstance(x, torch.Tensor) and x.is_floating_point():
                    room = torch.empty(x.numel() * x.element_size() + offset + 512, dtype=torch.uint8, device="cuda")
                    view = room[offset:offset + x.numel() * x.element_size()].view(x.dtype).view(x.shape)
                    view.copy_(x)
                    placed.append(view)
                else:
                    placed.append(x)
            for _ in range(3):
                model(*placed)
            times = []
            for _ in range(calls):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                model(*placed)
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end))
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                model(*placed)
                torch.cuda.synchronize()
            kernels = [(e.key, e.device_time_total) for e in prof.key_averages() if e.device_time_total > 0]
            total = sum(t for _, t in kernels) or 1.0
            first_input = next((v for v in placed if isinstance(v, torch.Tensor)), None)
            found[offset] = {"ms": statistics.median(times), "first": order.index(offset) == 0,
                             # where the input lies within its 2 MiB page (the device's large pages)
                             "in_page": first_input.data_ptr() % (1 << 21) if first_input is not None else -1,
                             "kernels": sorted(k[:70] for k, t in kernels if t >= 0.05 * total)}
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernelbench", required=True)
    parser.add_argument("--level", type=int, default=2)
    parser.add_argument("--only", type=int, required=True, help="one problem number")
    parser.add_argument("--processes", type=int, default=6)
    parser.add_argument("--offsets", default="0,16,64,128,256", help="bytes")
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    offsets = [int(o) for o in args.offsets.split(",")]
    if args.child:
        print(json.dumps(one_process(args.child, offsets, args.calls)))
        return
    pattern = os.path.join(args.kernelbench, "KernelBench", f"level{args.level}", f"{args.only}_*.py")
    task = sorted(glob.glob(pattern))[0]
    print(f"kernel choice: {os.path.basename(task)}, {platform.node()}, {args.processes} processes, "
          f"offsets {offsets} bytes, {args.calls} calls each")
    names, rows = {}, []
    for p in range(args.processes):
        out = subprocess.run([sys.executable, __file__, "--kernelbench", args.kernelbench, "--only", str(args.only),
                              "--offsets", args.offsets, "--calls", str(args.calls), "--child", task],
                             check=True, capture_output=True, text=True).stdout
        found = json.loads(out.strip().splitlines()[-1])
        for offset, seen in found.items():
            key = tuple(seen["kernels"])
            names.setdefault(key, f"set {len(names) + 1}")
            rows.append((p, int(offset), seen["in_page"], seen["ms"], names[key], seen["first"]))
    print("\n| process | offset B | input at, in its 2 MiB page | ms | kernels | first offset |\n|---|---|---|---|---|---|")
    for p, offset, in_page, ms, name, first in rows:
        print(f"| {p} | {offset} | {in_page:#x} | {ms:.3f} | {name} | {'yes' if first else ''} |")
    print()
    for key, name in names.items():
        print(f"{name}: " + "; ".join(key))


if __name__ == "__main__":
    main()
