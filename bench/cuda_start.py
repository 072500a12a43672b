"""What a sandbox process's CUDA start-up (zygote.warm_cuda) costs, step by step, and what the
zygote could do before it forks to make it cheaper.

Each evaluation's processes are forked from the zygote, which has imported PyTorch and Triton
but never touched CUDA; each then creates its CUDA context and the cuBLAS and cuDNN handles
while the previous evaluation runs, and the next timing waits until they are done
(`timing_quiet`). This forks processes from a parent set up as the zygote is, `--concurrency`
at once (3: one evaluation's judge, candidate and reference runner), and times in each: the
driver's `cuInit`, the device's primary context, PyTorch's CUDA state and first kernel
(`torch.zeros(1, device="cuda")`), the cuBLAS handle and the cuDNN handle, as warm_cuda makes them. Variants, each in a parent of its
own, alternated in rounds:

- `plain`: the parent as the zygote is now;
- `preloaded`: the parent has also opened (dlopen, no CUDA call) every shared library a
  child loads during its warm-up (found by a first child, listed below), so a child maps
  nothing new.

    python3 bench/cuda_start.py [--rounds 3] [--concurrency 1,3]
"""
import argparse
import ctypes
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time

STEPS = ("cuinit", "context", "torch", "cublas", "cudnn", "total")


def loaded_libraries() -> set:
    with open("/proc/self/maps") as maps:
        return {line.split()[-1] for line in maps if ".so" in line.split()[-1]}


def warm_up(report_fd: int) -> None:
    """In a forked child: the warm-up in steps, the seconds of each (and the libraries it
    loaded) as one JSON line to `report_fd`."""
    import torch
    before = loaded_libraries()
    seconds, t0 = {}, time.perf_counter()
    t = t0
    cuda = ctypes.CDLL("libcuda.so.1")
    cuda.cuInit(0)
    seconds["cuinit"] = time.perf_counter() - t
    t = time.perf_counter()
    device, context = ctypes.c_int(), ctypes.c_void_p()
    cuda.cuDeviceGet(ctypes.byref(device), 0)
    cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device)  # the context PyTorch then uses
    cuda.cuCtxSetCurrent(context)
    seconds["context"] = time.perf_counter() - t
    t = time.perf_counter()
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    seconds["torch"] = time.perf_counter() - t
    t = time.perf_counter()
    torch.ones(8, 8, device="cuda") @ torch.ones(8, 8, device="cuda")
    torch.cuda.synchronize()
    seconds["cublas"] = time.perf_counter() - t
    t = time.perf_counter()
    torch.nn.functional.conv2d(torch.ones(1, 1, 4, 4, device="cuda"), torch.ones(1, 1, 3, 3, device="cuda"))
    torch.cuda.synchronize()
    seconds["cudnn"] = time.perf_counter() - t
    seconds["total"] = time.perf_counter() - t0
    os.write(report_fd, (json.dumps({"seconds": seconds, "loaded": sorted(loaded_libraries() - before)}) + "\n").encode())
    os._exit(0)


def fork_at_once(n: int) -> list:
    """n children forked back to back, each warming up; their reports."""
    read_fd, write_fd = os.pipe()
    pids = []
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            warm_up(write_fd)
        pids.append(pid)
    os.close(write_fd)
    for pid in pids:
        os.waitpid(pid, 0)
    with os.fdopen(read_fd) as reports:
        return [json.loads(line) for line in reports]


def parent(variant: str, concurrency: list, preload: list) -> None:
    """The zygote's imports, then (preloaded) the libraries; then one set of children per
    concurrency; prints one JSON line."""
    import torch  # noqa: F401
    import setuptools.command.build_ext  # noqa: F401  (as the zygote)
    import triton  # noqa: F401
    if variant == "preloaded":
        for path in preload:
            ctypes.CDLL(path)
    print(json.dumps({str(n): fork_at_once(n) for n in concurrency}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", default="1,3")
    parser.add_argument("--parent", help=argparse.SUPPRESS)  # internal: run as the parent of one variant
    parser.add_argument("--preload", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    concurrency = [int(n) for n in args.concurrency.split(",")]
    if args.parent:
        parent(args.parent, concurrency, [p for p in args.preload.split(",") if p])
        return

    def run(variant: str, preload: list, counts: list) -> dict:
        out = subprocess.run([sys.executable, __file__, "--parent", variant, "--concurrency",
                              ",".join(map(str, counts)), "--preload", ",".join(preload)],
                             check=True, capture_output=True, text=True).stdout
        return json.loads(out.strip().splitlines()[-1])

    print(f"cuda start bench: {platform.node()}, {os.cpu_count()} CPUs; "
          f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')}")
    probe = run("plain", [], [1])["1"][0]
    preload = probe["loaded"]
    print(f"a child's warm-up loads {len(preload)} shared libraries: "
          + ", ".join(os.path.basename(p) for p in preload))
    seen, slowest = {}, {}  # (variant, n) -> [seconds dicts], [the last child's total of each set]
    for _ in range(args.rounds):
        variants = ["plain", "preloaded"]
        random.shuffle(variants)
        for variant in variants:
            for n, reports in run(variant, preload, concurrency).items():
                seen.setdefault((variant, int(n)), []).extend(r["seconds"] for r in reports)
                slowest.setdefault((variant, int(n)), []).append(max(r["seconds"]["total"] for r in reports))
    print("\n| variant | at once | children | " + " | ".join(f"{s} s" for s in STEPS) + " | slowest of a set s |")
    print("|---|---|---|" + "---|" * (len(STEPS) + 1))
    for (variant, n), rows in sorted(seen.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        cells = [f"{statistics.median(r[s] for r in rows):.3f}" for s in STEPS]
        print(f"| {variant} | {n} | {len(rows)} | " + " | ".join(cells)
              + f" | {statistics.median(slowest[(variant, n)]):.3f} |")
    print("(medians over every child of every round; the last column: the median over the rounds of the "
          "set's last child to finish, what the next timing waits for)")


if __name__ == "__main__":
    main()
