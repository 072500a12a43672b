"""Does the output copy inside kgym's timed batches pull a speedup towards 1?

kgym's judge times each side by its own clock around a request, and in that request each
call's output is copied into a buffer of the judge's (timing.py): on both sides alike, so a
candidate that is R/C times faster than the reference measures (R + copy) / (C + copy). For
each task and candidate given, on the GPU, in one process (the KernelBench way: fixed inputs,
L2 flushed before each call, CUDA events around each forward): the reference's and the
candidate's time per call, without and with a copy of the output into a buffer made
beforehand, and their speedups; then `kgym check --device cuda` of the same pair, whose
speedup should sit near the "with the copy" one if the copy is what moves it.

    python3 bench/output_copy_bias.py tasks/gelu_scale_residual:fused tasks/softmax_rows:fused [--kgym build/kgym]
"""
import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def per_call_ms(model, inputs: list, copy: bool, reps: int) -> float:
    """Median ms of one forward (and the copy of its outputs, with `copy`), L2 flushed before each."""
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    with torch.no_grad():
        out = model(*inputs)
        outputs = list(out) if isinstance(out, (tuple, list)) else [out]
        buffers = [torch.empty_like(t) for t in outputs]
        times = []
        for _ in range(reps):
            flush.zero_()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            out = model(*inputs)
            if copy:
                for dst, src in zip(buffers, list(out) if isinstance(out, (tuple, list)) else [out]):
                    dst.copy_(src)
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
    return statistics.median(times)


def kgym_speedup(kgym: str, task_dir: str, candidate: str) -> float:
    out = subprocess.run([kgym, "check", "--device", "cuda", "--json", "--task", task_dir, "--candidate", candidate],
                         capture_output=True, text=True)
    result = json.loads(out.stdout.splitlines()[-1]) if out.stdout.strip() else {}
    return float(result.get("speedup", 0.0)) if result.get("verdict") == "OK" else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pairs", nargs="+", help="TASK_DIR:CANDIDATE (a name in the task's candidates/)")
    parser.add_argument("--kgym", default=os.path.join(ROOT, "build", "kgym"))
    parser.add_argument("--reps", type=int, default=50)
    args = parser.parse_args()
    print(f"machine: {torch.cuda.get_device_name()}; CUDA events in one process, {args.reps} calls a cell, "
          "medians; kgym check --device cuda for the last column")
    print("| task:candidate | reference ms | candidate ms | speedup | with the copy: reference ms | candidate ms "
          "| speedup | kgym's speedup |")
    print("|---|---|---|---|---|---|---|---|")
    for pair in args.pairs:
        task_dir, name = pair.split(":")
        task = load(os.path.join(task_dir, "task.py"), "task")
        candidate = load(os.path.join(task_dir, "candidates", name + ".py"), "candidate")
        torch.manual_seed(0)
        init = task.get_init_inputs()
        with torch.device("cuda"):
            torch.manual_seed(1)
            reference = task.Model(*init)
            torch.manual_seed(1)
            new = candidate.ModelNew(*init)
            inputs = task.get_inputs()
        cells = [per_call_ms(m, inputs, copy, args.reps) for copy in (False, True) for m in (reference, new)]
        del reference, new, inputs
        torch.cuda.empty_cache()
        print(f"| {pair} | {cells[0]:.4f} | {cells[1]:.4f} | {cells[0] / cells[1]:.3f} | {cells[2]:.4f} | "
              f"{cells[3]:.4f} | {cells[2] / cells[3]:.3f} | {kgym_speedup(args.kgym, task_dir, name):.3f} |",
              flush=True)


if __name__ == "__main__":
    sys.exit(main())
