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

With --chunks N the input instead lies in N allocations of its own (cuMemCreate, as the
judge's arenas), each mapped at two virtual addresses: a time that follows the allocation is the
physical memory's doing, one that changes between two mappings of one allocation the addresses'
(if the addresses, the reference runner and the candidate's process could map their inputs at
the same ones).

    python3 bench/kernel_choice.py --kernelbench ../shared/kernelbench --level 2 --only 77 --processes 6
    python3 bench/kernel_choice.py --kernelbench ../shared/kernelbench --level 2 --only 77 --processes 3 --chunks 4
    python3 bench/kernel_choice.py --kernelbench ../shared/kernelbench --level 2 --only 77 --processes 3 --pads 6
    python3 bench/kernel_choice.py --kernelbench ../shared/kernelbench --level 2 --only 77 --processes 9 --ahead 2 --pads 4 --pad-max-mib 8192

With --pads N the input stays where it was made and what the model's calls allocate (its
intermediates, its output, cuDNN's workspace) is moved N times (a cache emptied, a pad held).
--pad-max-mib sets a pad's largest size (GiB pads reach other physical memory). With --ahead N
the processes overlap as the sandbox's do: N more have CUDA up while one runs, and each builds
its model once the one before has answered (on an H200 about half of the sandbox's processes
are slow for their whole life, in no order: bench/RESULTS.md).
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


def time_placed(model, placed: list, calls: int) -> tuple:
    """(median ms of `calls` calls by CUDA events, the kernels of one profiled call that took at
    least 5% of its GPU time)."""
    import torch
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
    return statistics.median(times), sorted(k for k, t in kernels if t >= 0.05 * total)  # full names: a tile or split is named late


def offset_placements(inputs: list, offsets: list):
    """Each input copied into a fresh buffer at each of `offsets` bytes in: (label, inputs)."""
    import torch
    for offset in offsets:
        placed = []
        for x in inputs:
            if isinstance(x, torch.Tensor) and x.is_floating_point():
                room = torch.empty(x.numel() * x.element_size() + offset + 512, dtype=torch.uint8, device="cuda")
                view = room[offset:offset + x.numel() * x.element_size()].view(x.dtype).view(x.shape)
                view.copy_(x)
                placed.append(view)
            else:
                placed.append(x)
        yield f"offset {offset}", placed


def mapped_placements(inputs: list, chunks: int):
    """Each input in `chunks` allocations of its own (cuMemCreate, as the judge's arenas), each
    mapped at two virtual addresses: (label, inputs) for chunk c's first and second mapping. A
    time that follows the chunk, not the mapping, is the memory's (physical); one that changes
    between the two mappings of one chunk, the addresses'."""
    import torch
    from kgym_sandbox import shared_tensors
    driver = shared_tensors.CudaDriver()
    for chunk in range(chunks):
        views = ([], [])
        for x in inputs:
            if isinstance(x, torch.Tensor) and x.is_floating_point():
                spec = shared_tensors.spec_of(x)
                first, fd = driver.alloc(x.numel() * x.element_size())
                second = driver.open(fd, x.numel() * x.element_size())
                views[0].append(shared_tensors.device_view(first, spec))
                views[1].append(shared_tensors.device_view(second, spec))
                views[0][-1].copy_(x)  # one memory: the second view sees it
            else:
                views[0].append(x)
                views[1].append(x)
        for mapping in (0, 1):
            yield f"chunk {chunk} map {mapping + 1}", views[mapping]


def padded_placements(inputs: list, pads: int, model=None, pad_max_mib: int = 64):
    """The input where it is, the model's intermediates and output moved: before each of `pads`
    placements PyTorch's cache is emptied and a pad of a random size (0-`pad_max_mib` MiB,
    512-byte steps) is held too (the pads add up), so what the calls allocate lands elsewhere:
    (label, inputs). A time that changes here follows what each process allocates for itself,
    not its inputs; GiB pads take it to other physical memory."""
    import torch
    held = []
    for n in range(pads):
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        size = random.randrange(0, pad_max_mib << 20, 512)
        held.append(torch.empty(max(size, 512), dtype=torch.uint8, device="cuda"))
        if model is not None:  # --move-weights: the parameters and buffers copied after the pad
            for t in list(model.parameters()) + list(model.buffers()):
                t.data = t.data.clone()
        yield f"pad {size >> 10} KiB", inputs


def one_process(task_path: str, offsets: list, chunks: int, calls: int, pads: int = 0, move_weights: bool = False,
                pad_max_mib: int = 64, wait: bool = False) -> dict:
    """With `wait`: CUDA started, then "ready" on stdout, and nothing more until a line on stdin
    (--ahead: the sandbox's order, where an evaluation's processes start while the one before
    runs and build once it is done)."""
    import torch
    sys.path.insert(0, os.path.join(ROOT, "gpu", "sandbox"))
    from kgym_sandbox import numerics
    numerics.pin()
    if wait:
        torch.zeros(1, device="cuda")
        torch.cuda.synchronize()
        print("ready", flush=True)
        sys.stdin.readline()
    namespace = {}
    exec(compile(open(task_path).read(), task_path, "exec"), namespace)
    torch.manual_seed(1)
    with torch.device("cuda"):
        model = namespace["Model"](*namespace["get_init_inputs"]()).eval()
    torch.manual_seed(2)
    with torch.device("cuda"):
        inputs = namespace["get_inputs"]()
    order = list(offsets)
    random.shuffle(order)
    found = {}
    with torch.no_grad():
        placements = padded_placements(inputs, pads, model if move_weights else None, pad_max_mib) if pads else \
            mapped_placements(inputs, chunks) if chunks else offset_placements(inputs, order)
        for n, (label, placed) in enumerate(placements):
            ms, kernels = time_placed(model, placed, calls)
            first_input = next((v for v in placed if isinstance(v, torch.Tensor)), None)
            output = model(*placed)
            found[f"{label} #{n}"] = {
                "ms": ms, "first": n == 0, "kernels": kernels,
                # where the input and the output lie within their 2 MiB pages (the device's large pages)
                "in_page": first_input.data_ptr() % (1 << 21) if first_input is not None else -1,
                "out_page": output.data_ptr() % (1 << 21) if isinstance(output, torch.Tensor) else -1}
            del output
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernelbench", required=True)
    parser.add_argument("--level", type=int, default=2)
    parser.add_argument("--only", type=int, required=True, help="one problem number")
    parser.add_argument("--processes", type=int, default=6)
    parser.add_argument("--offsets", default="0,16,64,128,256", help="bytes")
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--chunks", type=int, default=0,
                        help="instead of offsets: the input in this many allocations, each mapped twice")
    parser.add_argument("--pads", type=int, default=0,
                        help="instead of offsets: the input kept, what the calls allocate moved this many times")
    parser.add_argument("--move-weights", action="store_true", help="with --pads: the model's weights moved too")
    parser.add_argument("--pad-max-mib", type=int, default=64, help="with --pads: a pad's largest size")
    parser.add_argument("--ahead", type=int, default=0,
                        help="this many processes started (CUDA up) while one runs, each building once the one before "
                             "has answered, as the sandbox prepares evaluations (0: one after the other)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--wait", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    offsets = [int(o) for o in args.offsets.split(",")]
    if args.child:
        print(json.dumps(one_process(args.child, offsets, args.chunks, args.calls, args.pads, args.move_weights,
                                     args.pad_max_mib, args.wait)), flush=True)
        return
    pattern = os.path.join(args.kernelbench, "KernelBench", f"level{args.level}", f"{args.only}_*.py")
    task = sorted(glob.glob(pattern))[0]
    print(f"kernel choice: {os.path.basename(task)}, {platform.node()}, {args.processes} processes"
          f"{f' ({args.ahead} started ahead)' if args.ahead else ''}, offsets {offsets} bytes, {args.calls} calls each")
    command = [sys.executable, __file__, "--kernelbench", args.kernelbench, "--only", str(args.only),
               "--offsets", args.offsets, "--calls", str(args.calls), "--chunks", str(args.chunks),
               "--pads", str(args.pads), "--pad-max-mib", str(args.pad_max_mib), "--child", task] + \
        (["--move-weights"] if args.move_weights else []) + (["--wait"] if args.ahead else [])
    names, rows, started = {}, [], []
    for p in range(args.processes):
        if not args.ahead:
            out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        else:
            while len(started) < min(args.processes, p + 1 + args.ahead):  # CUDA up before this one runs
                proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                if proc.stdout.readline().strip() != "ready":
                    raise SystemExit(f"process {len(started)} did not start")
                started.append(proc)
            started[p].stdin.write("go\n")
            started[p].stdin.flush()
            out = started[p].stdout.readline()  # its answer; it exits while the next one builds
        found = json.loads(out.strip().splitlines()[-1])
        for label, seen in found.items():
            key = tuple(seen["kernels"])
            names.setdefault(key, f"set {len(names) + 1}")
            rows.append((p, label, seen["in_page"], seen["out_page"], seen["ms"], names[key], seen["first"]))
    for proc in started:
        proc.wait()
    print("\n| process | placement | input at, in its 2 MiB page | output at | ms | kernels | first |\n"
          "|---|---|---|---|---|---|---|")
    for p, label, in_page, out_page, ms, name, first in rows:
        print(f"| {p} | {label} | {in_page:#x} | {out_page:#x} | {ms:.3f} | {name} | {'yes' if first else ''} |")
    print()
    for key, name in names.items():
        print(f"{name}: " + "; ".join(key))


if __name__ == "__main__":
    main()
