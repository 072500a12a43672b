"""How far the identity answer's speedup lands from 1, evaluation to evaluation, and what moves it.

The identity answer (the task's own Model, renamed ModelNew) is exactly as fast as the
reference, so every evaluation's |speedup - 1| is the timing's error. This runs each task's
identity answer many times under each of several variants of `kgym check` (rounds alternate the
variants, so a drift of the machine falls on all of them alike) and prints, per task and
variant, the speedups' mean and spread across evaluations, beside the spread the evaluations
themselves claimed (`speedup_rse`): an error fixed within an evaluation but changing between
them shows as a spread far above the rse. Variants: `traced` (as users run it), `untraced`
(`--no-cupti`: no CUPTI injection library in either process; both carry it otherwise, the
reference runner for its own trace), `distinct` (the candidate's process and the reference runner on
cores of their own; by default they share one), `swapped` (on distinct cores, exchanged: a bias
that changes sign with it follows the cores, not the sides), `unpinned` (no timing cores: every
process where the OS puts it, waiting for requests by polling) and
`smallbatch` (4 GiB a batch, the default before 16: fewer calls a batch where sets are large) and
`expandable` (every sandbox process's PyTorch allocator on expandable segments, its memory
mapped in 2 MiB pages of one growing range: on an H200 it made `l2_77`'s slow placements more
frequent, not fewer, bench/RESULTS.md), `eager` (every sandbox process loads all its CUDA modules at start,
CUDA_MODULE_LOADING=EAGER: if a process's slowness follows where its kernels' code was loaded,
this makes every process alike) and `precise` (timing until the speedup's rse is 0.0005, up to 2 s a side: if the spread falls with
it, the error is noise within an evaluation; if not, a bias fixed per evaluation), `tighter` (until 0.0008, the cap unchanged) and
`looser` (until 0.002: what half the timing costs in spread). Also
the speedup with the request cost left on (`raw`): if that spreads less, the cost's estimate is
what moves.

    python3 bench/identity_bias.py --kernelbench ../shared/kernelbench --level 2 --only 1,69,93 --rounds 3 --per-round 2
"""
import argparse
import json
import os
import statistics
import tempfile

import judge_split_bench
import kernelbench_tasks

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def last_cores() -> list:
    """The last three cores this process may use (the executor takes the last two for GPU 0:
    sandbox_process.cpp, timing_cores_for)."""
    allowed = sorted(os.sched_getaffinity(0))
    return allowed[-3:] if len(allowed) >= 5 else []


def distinct_cores() -> str:
    """The judge, the candidate's process and the reference runner each on a core of its own
    (the default until 2026-11-26)."""
    cores = last_cores()
    return ",".join(map(str, cores)) if cores else "none"


def swapped_cores() -> str:
    cores = last_cores()
    return f"{cores[0]},{cores[2]},{cores[1]}" if cores else "none"


# name -> (more options of kgym check, more environment)
VARIANTS = {"traced": ([], {}), "untraced": (["--no-cupti"], {}),
            "swapped": ([], {"KGYM_TIMING_CORES": swapped_cores()}), "unpinned": ([], {"KGYM_TIMING_CORES": "none"}),
            "distinct": ([], {"KGYM_TIMING_CORES": distinct_cores()}),
            "smallbatch": (["--option", "batch_memory_mb=4096"], {}),
            "precise": (["--option", "timing_precision=0.0005", "--option", "max_timed_s=2"], {}),
            "tighter": (["--option", "timing_precision=0.0008"], {}),
            "looser": (["--option", "timing_precision=0.002"], {}),
            "kept": (["--option", "placement=PLACEMENT_KEPT"], {}),
            "redrawn": (["--option", "placement=PLACEMENT_REDRAWN"], {}),
            "checked": (["--option", "placement=PLACEMENT_CHECKED"], {}),
            "expandable": ([], {"KGYM_SANDBOX_ENV": "PYTORCH_CUDA_ALLOC_CONF",
                                "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}),
            "eager": ([], {"KGYM_SANDBOX_ENV": "CUDA_MODULE_LOADING", "CUDA_MODULE_LOADING": "EAGER"})}


def raw_speedup(r: dict) -> float:
    """The speedup with the request cost left on both sides (per call: cost / calls per batch)."""
    k = max(r.get("timed_batch_calls", 1), 1)
    cost_ms = r.get("candidate_call_overhead_us", 0.0) * 1e-3 / k
    ref, cand = r["reference_time"]["iqm_ms"], r["candidate_time"]["iqm_ms"]
    return (ref + cost_ms) / (cand + cost_ms)


def side_ms(r: dict) -> str:
    """Each side's time a call, reference / candidate: an identity answer of 1 can be two slow
    sides (on an H200 some processes run a model 30% slower for their whole life, bench/RESULTS.md)."""
    times = "/".join(f"{r.get(side, {}).get('iqm_ms', 0.0):.3f}" for side in ("reference_time", "candidate_time")) + " ms"
    return times + batches_timed(r)


def batches_timed(r: dict) -> str:
    """With placements redrawn, how many of each side's batches its time came from (its fast
    mode; ExecResult.reference_batches_timed of reference_batches_ms), where that is not all."""
    counts = [(r.get(f"{side}_batches_timed", 0), len(r.get(f"{side}_batches_ms", []))) for side in ("reference", "candidate")]
    if all(timed in (0, total) for timed, total in counts):
        return ""
    return "; batches timed " + " / ".join(f"{timed} of {total}" for timed, total in counts)


def summary(rows: list) -> str:
    ok = [r for r in rows if r.get("verdict") == "OK"]
    if len(ok) < 2:
        return f"{len(ok)} OK | - | - | - | - | - | - | -"
    s = [r["speedup"] for r in ok]
    raw = [raw_speedup(r) for r in ok]
    rse = [r.get("speedup_rse", 0.0) for r in ok]
    cost = [r.get("candidate_call_overhead_us", 0.0) for r in ok]
    return (f"{len(ok)} | {statistics.fmean(s):.4f} | {statistics.stdev(s):.4f} | {max(abs(x - 1) for x in s):.4f} | "
            f"{statistics.stdev(raw):.4f} | {statistics.fmean(rse):.4f} | {statistics.median(cost):.0f} | "
            f"{', '.join(f'{x:.3f}' for x in s)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kgym", default=os.path.join(ROOT, "build", "kgym"))
    parser.add_argument("--kernelbench", required=True, help="a KernelBench checkout")
    parser.add_argument("--level", type=int, default=2)
    parser.add_argument("--only", required=True, help="problem numbers, e.g. 1,69,93")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--per-round", type=int, default=2,
                        help="evaluations of each task per variant and round (at least 2: the first of each round "
                             "also starts the sandbox and is left out, so the first task gets one fewer)")
    parser.add_argument("--variant", action="append", choices=sorted(VARIANTS), help="default: traced, untraced")
    parser.add_argument("--out", help="every ExecResult, JSON lines")
    args = parser.parse_args()
    if args.per_round < 2:
        parser.error("--per-round must be at least 2: each round's first evaluation also starts the sandbox and "
                     "is left out, so with 1 the first task would get no result at all")
    only = {int(n) for n in args.only.split(",")}
    variants = args.variant or ["traced", "untraced"]
    results = {v: [] for v in variants}
    with tempfile.TemporaryDirectory() as workdir:
        tasks = [kernelbench_tasks.identity_task(p, args.level, workdir)
                 for p in kernelbench_tasks.problems(args.kernelbench, args.level, only)]
        for round_ in range(args.rounds):
            for v in (variants if round_ % 2 == 0 else variants[::-1]):
                options, env = VARIANTS[v]
                rows = judge_split_bench.run(args.kgym, tasks, "cuda", args.per_round, options, env)
                results[v] += rows
                print(f"round {round_ + 1}/{args.rounds} {v}: " + ", ".join(
                    f"{r.get('task_id')} {r.get('speedup', 0):.4f} ({side_ms(r)})" for r in rows), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            for v, rows in results.items():
                for r in rows:
                    f.write(json.dumps({"variant": v, **r}) + "\n")
    device = next((r["device_name"] for rows in results.values() for r in rows if r.get("device_name")), "unknown")
    print(f"machine: {device}; identity answers, {args.rounds} rounds x {args.per_round} evaluations per task and variant")
    print("| task | variant | OK | mean speedup | spread (stdev) | max abs(s - 1) | raw spread | mean rse | cost us | speedups |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for task in sorted({r.get("task_id") for rows in results.values() for r in rows}):
        for v in variants:
            print(f"| {task} | {v} | " + summary([r for r in results[v] if r.get("task_id") == task]) + " |")


if __name__ == "__main__":
    main()
