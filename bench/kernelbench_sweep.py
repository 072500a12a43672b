"""Every KernelBench problem of the given levels judged with its own reference as the answer.

Each problem's Model, renamed ModelNew, is correct by definition and exactly as fast as the
reference, so every verdict should be OK with a speedup of 1. The problems go through
`kgym serve` as a trainer would send them: one server (one executor per GPU, its sandbox kept
warm) with the problems as its task suite, every problem of a level submitted at once through
the Python client. Prints per level: verdict counts, every problem not OK with its message,
the slowest and most memory-hungry problems (for the three with the most, the parts of the
evaluation where the memory was: ExecResult.device_memory_by_part_mb), identity speedups and
evaluations per hour.
Every ExecResult goes to --out (JSON lines) for plotting.

With --baseline, KernelBench's own harness (`eval_kernel_against_ref`, run in one Python
process by bench/kernelbench_baseline.py, which says which of its packages were stubbed)
judges the same problems after kgym in the same run (once kgym serve has stopped), and a last
table gives both evaluations/hour and their ratio, and where the two disagree; then both again
from each side's first answer to its last (a long-running service's rate, without kgym's
sandbox start or KernelBench's imports and either side's first problem). Per level it also
compares peak device memory, both counted as the device's memory in use (kgym: every process of
an evaluation and the next ones' prepared beside it; KernelBench: its process, context included).

    python3 bench/kernelbench_sweep.py --kernelbench ../shared/kernelbench --level 1 --level 2 --level 3
    python3 bench/kernelbench_sweep.py --kernelbench ../shared/kernelbench --level 2 --only 1,5,9 --baseline
    python3 bench/kernelbench_sweep.py --kernelbench ../shared/kernelbench --level 1 --level 2 --level 3 --gpus all
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

import harness_parts
import kernelbench_tasks

from local_serve import ROOT, local_serve  # first: it puts the client on the path
from kgym_client import KgymClient

sys.path.insert(0, os.path.join(ROOT, "gpu", "sandbox"))
from kgym_sandbox.timing import (REFERENCE_AFTER_BOUND, delivery_bound_ms, delivery_excess_ms,  # noqa: E402
                                 result_after_ratio)


def sweep_level(client: KgymClient, tasks: list, level: int, args, out) -> list:
    """Submits every task of a level at once; returns the ExecResults in task order, printing
    progress and writing each to `out` as it comes (a run cut short keeps what it measured)."""
    options = {"precision": args.precision.upper(), "no_hacking_check": True, **args.option}
    ids = {}
    for task in tasks:
        name = os.path.basename(task)
        source = open(os.path.join(task, "candidates", "identity.py")).read()
        ids[client.submit(name, source, options=options)] = name
    by_task, started = {}, time.monotonic()
    arrivals = []
    while len(by_task) < len(ids):
        answer = client.receive()
        arrivals.append(time.monotonic())
        r = answer["result"]
        by_task[ids[answer["request_id"]]] = r
        if out:
            out.write(json.dumps({"level": level, **r}) + "\n")
            out.flush()
        print(f"  [{len(by_task)}/{len(tasks)} {time.monotonic() - started:6.0f} s] {r.get('task_id', '?')[:50]:50s} "
              f"{r.get('verdict', '?'):15s} {r.get('wall_s', 0):6.1f} s {r.get('peak_device_memory_mb', 0) / 1024:6.1f} GiB "
              f"speedup {r.get('speedup', 0):.4f}", file=sys.stderr, flush=True)
    return [by_task[os.path.basename(t)] for t in tasks], arrivals


def baseline_level(problems: list, args) -> tuple:
    """KernelBench's harness on the same problems, in its own process: (rows, stubbed, each
    row's arrival time)."""
    command = [sys.executable, os.path.join(ROOT, "bench", "kernelbench_baseline.py"),
               "--kernelbench", args.kernelbench, "--precision", args.precision] + problems
    rows, stubbed, started, arrivals = [], [], time.monotonic(), []
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as process:
        for line in process.stdout:
            if line.startswith('{"stubbed"'):
                stubbed = json.loads(line)["stubbed"]
            elif line.startswith('{"problem"'):
                row = json.loads(line)
                rows.append(row)
                arrivals.append(time.monotonic())
                print(f"  KernelBench [{len(rows)}/{len(problems)} {time.monotonic() - started:6.0f} s] "
                      f"{row['problem'][:50]:50s} {'correct' if row['correct'] else 'NOT correct':11s} "
                      f"{row['wall_s']:6.1f} s {row['device_memory_mb'] / 1024:6.1f} GiB "
                      f"(tensors {row['peak_device_memory_mb'] / 1024:.1f}) {row['error'][:80]}",
                      file=sys.stderr, flush=True)
    return rows, stubbed, arrivals


def option_value(text: str):
    """An --option's VALUE as JSON, else as text (an enum's name: placement=PLACEMENT_REDRAWN),
    as kgym check --option reads it."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def steady_rate(arrivals: list) -> float:
    """Evaluations/hour from the first answer to the last: a long-running service's rate, its
    start-up (kgym's sandbox, KernelBench's imports, each side's first problem) left out."""
    return 3600 * (len(arrivals) - 1) / max(arrivals[-1] - arrivals[0], 1e-9) if len(arrivals) > 1 else 0.0


STALL_FACTOR = 1.5  # a timed batch this many times its evaluation's median batch (both sides) stalled


def stalled_batches(result: dict) -> tuple:
    """(timed batches over STALL_FACTOR x the median of the evaluation's batches, both sides
    together; all of them): a stall on the timed core (a trace buffer written there once made
    one in five of the LSTM's and GRU's batches 2-5x their median). An identity answer's
    speedup is off wherever either side's batches stall more than a quarter of the time."""
    batches = list(result.get("reference_batches_ms", [])) + list(result.get("candidate_batches_ms", []))
    if not batches:
        return 0, 0
    bound = STALL_FACTOR * statistics.median(batches)
    return sum(b > bound for b in batches), len(batches)


IDENTITY_BOUND = 0.005  # issue 14: the identity answer's speedup within 1 +- this on level 2


def identity_outliers(ok: list) -> list:
    """(task, speedup, speedup_rse) of the OK identity answers beyond IDENTITY_BOUND, farthest
    first: an rse far below the distance is an error set for the whole evaluation, not noise."""
    far = [(r.get("task_id", "?"), r.get("speedup", 0.0), r.get("speedup_rse", 0.0)) for r in ok
           if round(abs(r.get("speedup", 0.0) - 1), 12) > IDENTITY_BOUND]  # 1 - 0.995 is 0.0050000000000000044
    return sorted(far, key=lambda x: -abs(x[1] - 1))


def level_strides(levels: list, strides: list) -> dict:
    """{level: stride}: none given, 1; one, for every level; else one per level, in order."""
    if len(strides) > 1 and len(strides) != len(levels):
        raise ValueError(f"{len(strides)} --stride for {len(levels)} --level: give one for all, or one per level")
    if any(n < 1 for n in strides):
        raise ValueError("--stride must be at least 1")
    return {level: strides[i] if len(strides) > 1 else (strides[0] if strides else 1) for i, level in enumerate(levels)}


def report(level: int, results: list, elapsed_s: float) -> None:
    counts = Counter(r.get("verdict", "?") for r in results)
    print(f"\nlevel {level}: {len(results)} problems, " + ", ".join(f"{v} {n}" for v, n in counts.most_common()) +
          f"; {elapsed_s:.0f} s, {3600 * len(results) / max(elapsed_s, 1e-9):.0f} evaluations/hour")
    ok = [r for r in results if r.get("verdict") == "OK"]
    if ok:
        deviation = [abs(r.get("speedup", 0) - 1) for r in ok]
        print(f"  identity |speedup - 1| over the OK: mean {statistics.fmean(deviation):.4f}, max {max(deviation):.4f}; "
              f"timed {statistics.fmean(r.get('timed_s', 0) for r in ok):.2f} s and wall "
              f"{statistics.fmean(r.get('wall_s', 0) for r in ok):.2f} s per evaluation, speedup_rse mean "
              f"{statistics.fmean(r.get('speedup_rse', 0) for r in ok):.5f}")
        far = identity_outliers(ok)
        print(f"  identity within {IDENTITY_BOUND}: {len(ok) - len(far)} of {len(ok)}" +
              ("" if not far else "; beyond: " + ", ".join(f"{t} {s:.4f} (rse {e:.4f})" for t, s, e in far[:8]) +
               (f" and {len(far) - 8} more" if len(far) > 8 else "")))
        paired = [(delivery_excess_ms(r.get("reference_delivery_ms", []), r.get("delivery_ms", []), r.get("delivery_parts", [])),
                   delivery_bound_ms(r.get("reference_delivery_ms", []), r.get("delivery_parts", []))) for r in ok]
        paired = [(e, b) for e, b in paired if e is not None]
        if paired:
            excess = [e for e, _ in paired]
            print(f"  deliveries beyond the reference runner's (each problem's upper quartile): median "
                  f"{statistics.median(excess):.3f} ms, least {min(excess):.3f}, most {max(excess):.3f}; "
                  f"most of its bound {max(e / b for e, b in paired):.2f} ({len(excess)} problems)")
        after = [a for a in map(result_after_ratio, ok) if a is not None]
        if after:
            print(f"  the reference's batches after the candidate's over those before: median "
                  f"{statistics.median(after):.3f}, least {min(after):.3f}, most {max(after):.3f} "
                  f"(bound {REFERENCE_AFTER_BOUND}; {len(after)} problems)")
        stalls = {r.get("task_id"): stalled_batches(r) for r in ok}
        stalled = sorted(((n, all_, task) for task, (n, all_) in stalls.items() if n), reverse=True)
        print(f"  batches over {STALL_FACTOR}x their evaluation's median: {sum(n for n, _ in stalls.values())} of "
              f"{sum(a for _, a in stalls.values())}, in {len(stalled)} problems" +
              ("" if not stalled else " (most: " + ", ".join(f"{t} {n}/{a}" for n, a, t in stalled[:3]) + ")"))
        confirmed = [r.get("confirming_batches", 0) for r in ok if r.get("confirming_batches", 0)]
        print(f"  timed on to confirm a clock rule's finding (ExecResult.confirming_batches): {len(confirmed)} of "
              f"{len(ok)} problems" + (f", {sum(confirmed)} batches in all" if confirmed else ""))
    harness_parts.print_parts({f"level {level}": results})
    for r in results:
        if r.get("verdict") != "OK":
            print(f"  not OK: {r.get('task_id')}: {r.get('verdict')} ({r.get('failed_phase', '')}) "
                  f"{r.get('message', '')[:240]}")
    print("  slowest: " + ", ".join(f"{r.get('task_id')} {r.get('wall_s', 0):.1f} s"
                                    for r in sorted(results, key=lambda r: -r.get("wall_s", 0))[:5]))
    print("  most GPU memory: " + ", ".join(f"{r.get('task_id')} {r.get('peak_device_memory_mb', 0) / 1024:.1f} GiB"
                                           for r in sorted(results, key=lambda r: -r.get("peak_device_memory_mb", 0))[:5]))
    for r in sorted(results, key=lambda r: -r.get("peak_device_memory_mb", 0))[:3]:
        parts = memory_parts(r)
        if parts:
            print(f"    {r.get('task_id')} by part (GiB, the judge's own in brackets): " +
                  ", ".join(f"{part} {device:.1f} ({judge:.1f})" for part, device, judge in parts))


def memory_parts(result: dict, n: int = 4) -> list:
    """(part, device GiB, judge's GiB) of the n parts of an evaluation that ended with the most
    GPU memory in use (ExecResult.device_memory_by_part_mb), most first."""
    device, judge = result.get("device_memory_by_part_mb", {}), result.get("judge_memory_by_part_mb", {})
    return [(part, mb / 1024, judge.get(part, 0.0) / 1024)
            for part, mb in sorted(device.items(), key=lambda item: (-item[1], item[0]))[:n]]


def memory_ratios(results: list, rows: list) -> list:
    """(task, kgym's peak device memory / KernelBench's) per problem, largest first: both as the
    device's memory in use (every process of kgym's evaluation and the next ones' warm-ups;
    KernelBench's process, its context included)."""
    pairs = [(r.get("task_id", "?"), r.get("peak_device_memory_mb", 0.0) / row["device_memory_mb"])
             for r, row in zip(results, rows) if row.get("device_memory_mb", 0.0) > 0]
    return sorted(pairs, key=lambda pair: -pair[1])


def print_memory(results: list, rows: list) -> None:
    ratios = memory_ratios(results, rows)
    if ratios:
        print(f"  peak device memory, kgym / KernelBench's harness: median {statistics.median(r for _, r in ratios):.2f}x, "
              f"most " + ", ".join(f"{task} {ratio:.2f}x" for task, ratio in ratios[:3]))


def compare(level: int, results: list, kgym_s: float, rows: list, baseline_s: float, stubbed: list,
            kgym_steady: float, baseline_steady: float) -> str:
    """Prints where kgym and KernelBench's harness disagree; returns the level's table row."""
    print(f"\nlevel {level}, KernelBench's harness: {sum(r['correct'] for r in rows)}/{len(rows)} correct, "
          f"{baseline_s:.0f} s; stubbed packages: {', '.join(stubbed) or 'none'}")
    for result, row in zip(results, rows):
        if (result.get("verdict") == "OK") != row["correct"]:
            print(f"  disagree: {result.get('task_id')}: kgym {result.get('verdict')}, KernelBench "
                  f"{'correct' if row['correct'] else 'not correct'} {row['error'][:200]}")
    print_memory(results, rows)
    kgym_rate = 3600 * len(results) / max(kgym_s, 1e-9)
    baseline_rate = 3600 * len(rows) / max(baseline_s, 1e-9)
    ok = sum(r.get("verdict") == "OK" for r in results)
    return (f"| {level} | {len(results)} | {ok} | {sum(r['correct'] for r in rows)} | {kgym_rate:.0f} | "
            f"{baseline_rate:.0f} | {kgym_rate / max(baseline_rate, 1e-9):.2f} | {kgym_steady:.0f} | "
            f"{baseline_steady:.0f} | {kgym_steady / max(baseline_steady, 1e-9):.2f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernelbench", required=True, help="a KernelBench checkout (e.g. ../shared/kernelbench)")
    parser.add_argument("--level", type=int, action="append", required=True, help="1, 2 or 3; repeat for several")
    parser.add_argument("--only", help="problem numbers of each level, e.g. 1,5,40 (default: all)")
    parser.add_argument("--stride", type=int, action="append", default=[],
                        help="every Nth problem of each level (a sample); repeat it to give each --level its own, "
                             "in the same order")
    parser.add_argument("--kgym", default=os.path.join(ROOT, "build", "kgym"))
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cuda")
    parser.add_argument("--precision", choices=["fp32", "fp16", "bf16"], default="fp32")
    parser.add_argument("--baseline", action="store_true",
                        help="also run KernelBench's eval_kernel_against_ref on the same problems (needs cuda)")
    parser.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                        help="an EvalOptions field for every request, e.g. min_timed_s=1 or\n"
                             "placement=PLACEMENT_REDRAWN (VALUE as JSON, else as text; repeatable)")
    parser.add_argument("--gpus", help="kgym serve --gpus: one executor per GPU, e.g. 0,1,2,3 or all (default: one)")
    parser.add_argument("--out", help="write every ExecResult here (JSON lines)")
    args = parser.parse_args()
    try:
        strides = level_strides(args.level, args.stride)
    except ValueError as error:
        parser.error(str(error))
    args.option = {name: option_value(value) for name, value in (o.split("=", 1) for o in args.option)}
    only = {int(n) for n in args.only.split(",")} if args.only else None
    out = open(args.out, "w") if args.out else None
    machine, comparison = None, []
    with tempfile.TemporaryDirectory() as workdir:
        tasks_dir = os.path.join(workdir, "tasks")
        chosen = {}
        for level in args.level:
            problems = kernelbench_tasks.problems(args.kernelbench, level, only)[::strides[level]]
            chosen[level] = (problems, [kernelbench_tasks.identity_task(p, level, tasks_dir) for p in problems])
        serve_args = ["--device", args.device, "--tasks-dir", tasks_dir] + (["--gpus", args.gpus] if args.gpus else [])
        swept = {}
        with local_serve(args.kgym, serve_args, workdir) as client:
            for level, (problems, tasks) in chosen.items():
                print(f"level {level}: {len(tasks)} problems through kgym serve", file=sys.stderr, flush=True)
                started = time.monotonic()
                results, arrivals = sweep_level(client, tasks, level, args, out)
                swept[level] = (results, arrivals, time.monotonic() - started)
                machine = machine or next((r["device_name"] for r in results if r.get("device_name")), None)
                report(level, results, swept[level][2])
        # After kgym serve has stopped: its processes (the next evaluations', prepared ahead) would
        # hold the GPU's memory and cores beside KernelBench's harness.
        for level, (results, arrivals, elapsed) in swept.items() if args.baseline else ():
            print(f"level {level}: the same problems through KernelBench's harness", file=sys.stderr, flush=True)
            started = time.monotonic()
            rows, stubbed, baseline_arrivals = baseline_level(chosen[level][0], args)
            comparison.append(compare(level, results, elapsed, rows, time.monotonic() - started, stubbed,
                                      steady_rate(arrivals), steady_rate(baseline_arrivals)))
    print(f"\nmachine: {machine or 'unknown'}{f' (GPUs {args.gpus})' if args.gpus else ''}; precision "
          f"{args.precision}; identity answers through {args.kgym} serve --device {args.device}")
    if comparison:
        print("\n| level | problems | kgym OK | KernelBench correct | kgym evals/hour | KernelBench evals/hour | ratio "
              "| kgym after its first | KernelBench after its first | ratio |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for row in comparison:
            print(row)


if __name__ == "__main__":
    main()
