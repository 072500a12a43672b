"""Where a timed request's time around the kernels goes, stage by stage, outside the sandbox.

kgym times each side by the judge's clock around a request of k calls to another process (the
reference runner, the candidate's process): on an H200 consecutive batches differed by 0.1-0.7%
by that clock and by 0.02-0.1% by the kernels' own times in the CUPTI traces (bench/RESULTS.md, "The time
goes into the requests' noise"), and the timing runs until that noise averages out. This forks
a judge and a runner as the sandbox has them (the same channel code, the task's Model in eval
mode on k input sets, each process on a core of its own) and stamps every stage of each timed
request on the host's monotonic clock, which both processes read: the judge's send to the
runner's receive (its wake-up), the receive to the last call launched, from there to the
synchronisation's return, and on to the judge's receive of the answer; beside them the GPU's
time for the k calls by CUDA events in the runner. Per stage it prints the median and how much
consecutive batches differ (1.4826 x the median absolute deviation of the differences, over
sqrt 2). Variants, each a fresh pair, alternated in rounds:

- `plain`: as kgym: the runner waits for requests asleep, the judge flushes L2 in its own context
  (so the GPU switches contexts at the start of every batch);
- `spin`: the runner waits by polling (the twenty-second session's `arm` made it do so for the
  timed request);
- `flush-here`: the runner flushes L2 in its own context on a request of its own before the timed
  one, so no context switch precedes the batch;
- `traced`: as plain, with the runner traced as a candidate's process is (the CUPTI injection
  library on the GPU, the trace library on the CPU, under a key of its own) and its batch
  bounded by the same phase calls (batch, then idle once synchronised).

    python3 bench/request_stages.py --kernelbench ../shared/kernelbench --level 2 --only 73 [--batches 60] [--k 8]
    python3 bench/request_stages.py --task tasks/row_sum --device cpu --batches 10   (the plumbing)
"""
import argparse
import json
import math
import os
import socket
import statistics
import sys
import tempfile
import time

import process_speed

STAGES = ("wake", "launch", "sync", "answer", "total", "gpu")
VARIANTS = ("plain", "spin", "flush-here", "traced")
TRACE_KEY_BYTES = 16  # gpu/trace/trace_mac.hpp


def spread(values: list) -> float:
    """How much consecutive values differ: 1.4826 x the median absolute deviation of their
    differences, over sqrt 2; nan below three values."""
    steps = [b - a for a, b in zip(values, values[1:])]
    if len(steps) < 2:
        return float("nan")
    middle = statistics.median(steps)
    return 1.4826 * statistics.median(abs(d - middle) for d in steps) / math.sqrt(2)


def pin(core) -> None:
    if core is not None:
        os.sched_setaffinity(0, {core})
    try:
        os.setpriority(os.PRIO_PROCESS, 0, -20)  # as kgym's trusted processes, where granted
    except OSError:
        pass


def flusher(torch, device: str):
    """Zeroes twice the L2 cache and waits, as timing.Clock.ready; nothing on the CPU."""
    if device != "cuda":
        return lambda: None
    buffer = torch.empty(max(2 * torch.cuda.get_device_properties(0).L2_cache_size, 1 << 20), dtype=torch.uint8,
                         device="cuda")

    def flush():
        buffer.zero_()
        torch.cuda.synchronize()
    return flush


def start_trace(device: str, library: str, workdir: str):
    """Has this process traced as the sandbox does a candidate's (before CUDA starts): the
    library named, its key on a pipe, the trace in `workdir`. Returns its Tracer."""
    from kgym_sandbox import tracing
    os.environ["KGYM_CUPTI_LIB" if device == "cuda" else "KGYM_TRACE_LIB"] = library
    key_r, key_w = os.pipe()
    os.write(key_w, os.urandom(TRACE_KEY_BYTES))
    os.close(key_w)
    tracing.start(workdir, key_r, device)
    return tracing.Tracer(device)


def runner(task_path: str, sock: socket.socket, device: str, k: int, spin: bool, core, trace_library: str = "") -> None:
    """Answers "flush" and "batch" (k calls on k input sets, stamped) until "stop"; with
    `trace_library`, traced, each batch between the phase calls batch and idle."""
    import torch
    from kgym_sandbox import channel, tracing
    pin(core)
    tracer = start_trace(device, trace_library, os.path.dirname(task_path)) if trace_library else None
    if device == "cuda":
        model, inputs = process_speed.built_model(torch, task_path)
    else:
        task = process_speed.load_task(task_path)
        torch.manual_seed(0)
        model, inputs = task.Model(*task.get_init_inputs()).eval(), task.get_inputs()
    sets = [[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs] for _ in range(k)]
    flush, chan = flusher(torch, device), channel.Channel(sock, spin=spin)
    with torch.no_grad():
        model(*sets[0])  # the first call's loads and choices, before any batch
        while True:
            message, _ = chan.receive()
            received = time.perf_counter()
            if message["op"] == "stop":
                return
            if message["op"] == "flush":
                flush()
                chan.send({})
                continue
            if tracer:
                tracer.phase(tracing.BATCH)
            if device == "cuda":
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
            for inputs in sets:
                model(*inputs)
            if device == "cuda":
                end.record()
            launched = time.perf_counter()
            if device == "cuda":
                torch.cuda.synchronize()
            if tracer:
                tracer.phase(tracing.IDLE)
            synced = time.perf_counter()
            chan.send({"received": received, "launched": launched, "synced": synced,
                       "gpu_ms": start.elapsed_time(end) if device == "cuda" else 0.0})


def judge(sock: socket.socket, device: str, batches: int, flush_here: bool, core, out_fd: int) -> None:
    """Times `batches` requests as kgym's judge does (flush, clock, request, answer) and writes
    each one's stages (us) to `out_fd`, one JSON line."""
    import torch
    from kgym_sandbox import channel
    pin(core)
    flush, chan = flusher(torch, device), channel.Channel(sock, spin=device == "cuda")
    rows = []
    for _ in range(batches + 1):  # the first is left out: no batch ran before it
        if flush_here:
            chan.send({"op": "flush"})
            chan.receive()
        else:
            flush()
        t0 = time.perf_counter()
        chan.send({"op": "batch"})
        answer, _ = chan.receive()
        t1 = time.perf_counter()
        us = lambda a, b: (b - a) * 1e6  # noqa: E731
        rows.append({"wake": us(t0, answer["received"]), "launch": us(answer["received"], answer["launched"]),
                     "sync": us(answer["launched"], answer["synced"]), "answer": us(answer["synced"], t1),
                     "total": us(t0, t1), "gpu": answer["gpu_ms"] * 1e3})
    chan.send({"op": "stop"})
    with os.fdopen(out_fd, "w") as out:
        out.write(json.dumps(rows[1:]) + "\n")


def one_pair(task_path: str, variant: str, args, cores: list) -> list:
    judge_end, runner_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    read_fd, write_fd = os.pipe()

    def as_runner():  # without the judge's ends: a judge that dies then ends the runner and the read below
        judge_end.close()
        os.close(write_fd)
        runner(task_path, runner_end, args.device, args.k, variant == "spin", cores[1],
               args.trace_library if variant == "traced" else "")

    def as_judge():
        runner_end.close()
        judge(judge_end, args.device, args.batches, variant == "flush-here", cores[0], write_fd)

    pids = [process_speed.forked(as_runner), process_speed.forked(as_judge)]
    os.close(write_fd)
    judge_end.close()
    runner_end.close()
    with os.fdopen(read_fd) as results:
        line = results.readline()
    for pid in pids:
        os.waitpid(pid, 0)
    if not line:
        sys.exit(f"the {variant} pair failed (its error is above)")
    return json.loads(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernelbench", help="a KernelBench checkout (or --task)")
    parser.add_argument("--level", type=int, default=2)
    parser.add_argument("--only", type=int, help="the problem's number")
    parser.add_argument("--task", help="a task directory instead of a KernelBench problem")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--k", type=int, default=8, help="calls a batch, each on an input set of its own")
    parser.add_argument("--batches", type=int, default=60, help="timed batches a pair")
    parser.add_argument("--rounds", type=int, default=2, help="fresh pairs of each variant, alternated")
    parser.add_argument("--variant", action="append", choices=VARIANTS, help="default: all")
    parser.add_argument("--trace-library", help="for `traced`: default build/libkgym_cupti.so on the GPU, "
                        "build/libkgym_trace.so on the CPU")
    args = parser.parse_args()
    if not args.task and not (args.kernelbench and args.only is not None):
        parser.error("give --kernelbench and --only, or --task")
    args.trace_library = os.path.abspath(args.trace_library or os.path.join(
        os.path.dirname(__file__), "..", "build", "libkgym_cupti.so" if args.device == "cuda" else "libkgym_trace.so"))
    if "traced" in (args.variant or VARIANTS) and not os.path.exists(args.trace_library):
        parser.error(f"{args.trace_library} is missing: build kgym first, or leave out --variant traced")
    allowed = sorted(os.sched_getaffinity(0))
    cores = allowed[-2:] if len(allowed) >= 4 else [None, None]  # the judge's, the runner's
    import torch  # noqa: F401  imported before the forks, as in the sandbox's zygote (no CUDA here)
    results = {v: [] for v in args.variant or VARIANTS}
    with tempfile.TemporaryDirectory() as workdir:
        task_path = os.path.join(process_speed.task_dir(args, workdir), "task.py")
        for r in range(args.rounds):
            for variant in results:
                rows = one_pair(task_path, variant, args, cores)
                results[variant].append(rows)
                print(f"  round {r + 1} {variant}: total median {statistics.median(x['total'] for x in rows):.0f} us",
                      file=sys.stderr, flush=True)
    print(f"{os.path.basename(os.path.dirname(task_path))}, {args.k} calls a batch, {args.batches} batches a pair, "
          f"{args.rounds} pairs a variant; judge on core {cores[0]}, runner on {cores[1]}; median us (spread between "
          "consecutive batches, us), spread medians over the pairs")
    print("| variant | " + " | ".join(STAGES) + " | total's spread % |")
    print("|---|" + "---|" * (len(STAGES) + 1))
    for variant, pairs in results.items():
        cells = [f"{statistics.median(statistics.median(x[s] for x in rows) for rows in pairs):.0f} "
                 f"({statistics.median(spread([x[s] for x in rows]) for rows in pairs):.1f})" for s in STAGES]
        relative = statistics.median(100 * spread([x["total"] for x in rows]) / statistics.median(x["total"] for x in rows)
                                     for rows in pairs)
        print(f"| {variant} | " + " | ".join(cells) + f" | {relative:.2f} |")


if __name__ == "__main__":
    main()
