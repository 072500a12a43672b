"""What running the judge in a process of its own costs, and how exact its clock is.

Runs the identity answer (the task's own Model, renamed ModelNew: correct by definition,
exactly as fast as the reference) through two kgym builds in the same run, alternating:
`--before` (e.g. a build of an earlier commit) and `--after` (this tree's). Per task and build
it reports the evaluation's wall time (the first evaluation of each process, which also starts
the sandbox, is left out), the identity speedup (1 is exact) and the verdict. Tasks: the
built-in >= 1 ms tasks with an identity candidate, and every `--stride`-th problem of the given
KernelBench levels.

    python3 bench/judge_split_bench.py --before OLD/build/kgym --kernelbench ../shared/kernelbench --level 2
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import harness_parts
import kernelbench_tasks

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILTIN = ["square_matmul", "conv_bias_relu"]  # the built-in tasks with an identity candidate


def identity_tasks(kernelbench: str, levels: list, stride: int, workdir: str) -> list:
    """Task directories, each with candidates/identity.py (its Model renamed ModelNew)."""
    dirs = [os.path.join(ROOT, "tasks", name) for name in BUILTIN]
    for level in levels:
        dirs += [kernelbench_tasks.identity_task(p, level, workdir)
                 for p in kernelbench_tasks.problems(kernelbench, level)[::stride]]
    return dirs


def run(kgym: str, tasks: list, device: str, candidates: int = 2, extra: tuple = (), env: dict = None) -> list:
    """The identity answer `candidates` times on each task in one `kgym check` (`extra`: more of
    its options, `env`: more environment); the first result of all is left out: it also started
    the sandbox."""
    command = [kgym, "check", "--device", device, "--json", "--no-hacking-check", *extra]
    command += ["--candidate", "identity"] * candidates
    for task in tasks:
        command += ["--task", task]
    out = subprocess.run(command, capture_output=True, text=True, timeout=3000, env={**os.environ, **(env or {})})
    results = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    if not results:
        sys.exit(f"{kgym} printed no result: {out.stderr[-2000:]}")
    return results[1:]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--after", default=os.path.join(ROOT, "build", "kgym"))
    parser.add_argument("--before", help="another kgym build to compare with, in the same run")
    parser.add_argument("--kernelbench", help="a KernelBench checkout (e.g. ../shared/kernelbench)")
    parser.add_argument("--level", type=int, action="append", default=[])
    parser.add_argument("--stride", type=int, default=12, help="every N-th problem of each level")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cuda")
    parser.add_argument("--out", help="write every ExecResult here (JSON lines)")
    args = parser.parse_args()
    builds = [("before", args.before)] if args.before else []
    builds.append(("after", args.after))
    with tempfile.TemporaryDirectory() as workdir:
        tasks = identity_tasks(args.kernelbench, args.level, args.stride, workdir) if args.kernelbench else \
            [os.path.join(ROOT, "tasks", name) for name in BUILTIN]
        results = {name: run(path, tasks, args.device) for name, path in builds}
    if args.out:
        with open(args.out, "w") as f:
            for name, rows in results.items():
                for r in rows:
                    f.write(json.dumps({"build": name, **r}) + "\n")
    print(f"machine: {device_name(results)}; identity answers, {len(tasks)} tasks, 2 evaluations each per build")
    names = [name for name, _ in builds]
    print("| task | " + " | ".join(f"{n} verdict | {n} wall s | {n} speedup" for n in names) + " |")
    print("|---|" + "---|---|---|" * len(names))
    by_task = {name: {} for name in names}
    for name in names:
        for r in results[name]:
            by_task[name].setdefault(r.get("task_id", "?"), []).append(r)
    for task in sorted(set().union(*[set(t) for t in by_task.values()])):
        cells = []
        for name in names:
            rows = by_task[name].get(task, [])
            cells.append(f"{'/'.join(sorted({r.get('verdict', '?') for r in rows}))} | "
                         f"{statistics.fmean([r.get('wall_s', 0) for r in rows]) if rows else 0:.2f} | "
                         f"{', '.join('%.4f' % r.get('speedup', 0) for r in rows)}")
        print(f"| {task} | " + " | ".join(cells) + " |")
    for name in names:
        ok = [r for r in results[name] if r.get("verdict") == "OK"]
        walls = sum(r.get("wall_s", 0) for r in results[name])
        dev = [abs(r["speedup"] - 1) for r in ok]
        cost = [r["candidate_call_overhead_us"] for r in results[name] if "candidate_call_overhead_us" in r]
        print(f"{name}: {len(ok)}/{len(results[name])} OK, wall {walls:.1f} s, identity |speedup - 1| "
              f"mean {statistics.fmean(dev) if dev else 0:.4f} max {max(dev) if dev else 0:.4f}"
              + (f", request cost taken off median {statistics.median(cost):.0f} us" if cost else ""))
        bad = [r for r in results[name] if r.get("verdict") != "OK"]
        for r in bad:
            print(f"  {name} {r.get('task_id')}: {r.get('verdict')} {r.get('message', '')[:300]}")
    harness_parts.print_parts({name: results[name] for name in names})
    if len(names) == 2:
        common = [t for t in by_task["after"] if t in by_task["before"]
                  and all(r.get("verdict") == "OK" for r in by_task["after"][t] + by_task["before"][t])]
        before = sum(r["wall_s"] for t in common for r in by_task["before"][t])
        after = sum(r["wall_s"] for t in common for r in by_task["after"][t])
        if common:
            print(f"wall time after / before over the {len(common)} tasks OK in both: {after / before:.3f}")


def device_name(results: dict) -> str:
    for rows in results.values():
        for r in rows:
            if r.get("device_name"):
                return r["device_name"]
    return "unknown"


if __name__ == "__main__":
    main()
