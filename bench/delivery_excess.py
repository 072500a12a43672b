"""What a candidate's deliveries take beyond the reference runner's: the figures behind the rule.

On the GPU the judge has both sides deliver the outputs it compares, off its clock, a part at a
time, the two taking turns at going first; kgym's runner only copies, so an honest candidate's
delivery takes what its pair takes, and work done in a delivery (by the candidate's process with
its trace off, or by a helper writing the judge's slots) adds its whole time.
`timing.delivery_excess_ms` (the upper quartile of the differences, a batch's deliveries summed:
ExecResult's delivery_ms, reference_delivery_ms and delivery_parts) above `timing.delivery_bound_ms`
is HACKED (delivery_slower_than_reference).
Work left running past the candidate's answers instead, done while the reference's next batch runs,
slows that batch: `timing.reference_after_ratio` (the reference's batches right after the
candidate's over those before them) above REFERENCE_AFTER_BOUND is HACKED too
(reference_slowed_after_candidate); its column is printed beside.
This runs `kgym check --json --no-hacking-check` (evidence recorded, the verdict as the outputs
make it) for every task's own candidates (mostly honest; `cheat*` and `wrong` say what they are)
and for hostile ones that work in a delivery or through a helper, and prints one line each:
verdict, evidence, deliveries, the excess and its bound, and the candidate's timed time per call
(what it saves by moving its work), so that the bound can be seen between the two groups.

    python3 bench/delivery_excess.py [--kgym build/kgym] [--device cuda] [--only-tasks | --only-hostile]
                                     [--tasks a,b] [--out F]
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "gpu", "sandbox"))
from kgym_sandbox.timing import (REFERENCE_AFTER_BOUND, delivery_bound_ms, delivery_excess_ms,  # noqa: E402
                                 result_after_ratio)

# (task, hostile file, the files it is appended to, in order: as tests/hostile_test.cpp's cases)
FUSED = "tasks/gelu_scale_residual/candidates/fused.py"
UNTRACED = "tests/hostile/untraced_base.py"
HOSTILE = [("gelu_scale_residual", "works_in_delivery", (FUSED,)), ("gelu_scale_residual", "defers_work", (FUSED,)),
           ("square_matmul", "works_in_helper", ()), ("square_matmul", "hands_buffers_to_helper", ()),
           ("square_matmul", "works_in_delivery_untraced", (UNTRACED,)),
           ("square_matmul", "works_in_some_deliveries", (UNTRACED,)),
           ("square_matmul", "works_in_first_deliveries", (UNTRACED,)),
           ("square_matmul", "works_while_reference_runs", (UNTRACED,)),
           ("square_matmul", "works_into_next_reference", (UNTRACED,)),
           ("gelu_scale_residual", "skips_unchosen_calls", (UNTRACED, FUSED)),
           ("gelu_scale_residual", "skips_unchosen_untraced", (UNTRACED, FUSED)),
           ("tests/tasks/launch_bound", "batches_ahead", ()),
           ("tests/tasks/launch_bound", "batches_ahead_padded", ("tests/hostile/batches_ahead.py",)),
           ("tests/tasks/launch_bound", "batches_ahead_torch", ("tests/hostile/batches_ahead.py",))]


def check(kgym: str, device: str, task: str, candidate: str) -> list:
    """ExecResults (JSON) of `kgym check` of `candidate` ("all": the task's candidates) on `task` (a
    built-in task's name, or a task folder's path from the repository's root)."""
    out = subprocess.run([kgym, "check", "--device", device, "--json", "--no-hacking-check", "--task",
                          os.path.join(ROOT, task if "/" in task else os.path.join("tasks", task)), "--candidate", candidate],
                         capture_output=True, text=True)
    results = []
    for line in out.stdout.splitlines():
        try:
            results.append(json.loads(line))
        except ValueError:
            continue
    if not results:
        print(f"  {task} {candidate}: no result ({out.stderr.strip().splitlines()[-1:] or 'no output'})")
    return results


def row(group: str, task: str, r: dict) -> str:
    """One result's line; `r` as `kgym check --json` prints it (the schema's field names, empty
    lists left out)."""
    deliveries = r.get("delivery_ms", [])
    parts = r.get("delivery_parts", [])
    excess = delivery_excess_ms(r.get("reference_delivery_ms", []), deliveries, parts)
    bound = delivery_bound_ms(r.get("reference_delivery_ms", []), parts)
    after = result_after_ratio(r)
    kinds = sorted({e.get("kind", "") for e in r.get("evidence", []) if e.get("kind") != "NO_GENERATED_KERNEL"})
    per_call = r.get("candidate_time", {}).get("median_ms")
    share, share_all = r.get("batch_gpu_share"), r.get("batch_gpu_share_all")
    return (f"{group:8s} {task[:20]:20s} {r.get('candidate_id', '?')[:26]:26s} {r.get('verdict', '?'):14s} "
            f"{len(deliveries):5d} {r.get('confirming_batches', 0):4d} "
            f"{'-' if excess is None else f'{excess:9.3f}':>9s} {bound:7.3f} {'-' if after is None else f'{after:6.3f}':>6s} "
            f"{'-' if share is None else f'{share:6.3f}':>6s} {'-' if share_all is None else f'{share_all:6.3f}':>6s} "
            f"{'-' if per_call is None else f'{per_call:9.3f}':>9s}  "
            f"{', '.join(kinds)[:60]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kgym", default=os.path.join(ROOT, "build", "kgym"))
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--only-tasks", action="store_true", help="only the tasks' own candidates")
    parser.add_argument("--only-hostile", action="store_true", help="only the hostile candidates")
    parser.add_argument("--tasks", default="", help="comma-separated task names (default: every task in tasks/)")
    parser.add_argument("--out", default="", help="every ExecResult as a JSON line, its group beside (for plotting)")
    args = parser.parse_args()
    out = open(args.out, "w") if args.out else None

    def show(group: str, task: str, r: dict) -> None:
        print(row(group, task, r), flush=True)
        if out:
            out.write(json.dumps(dict(r, group=group)) + "\n")
    try:
        import torch
        machine = torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU"
    except ImportError:
        machine = "no torch"
    print(f"delivery excess: {machine}, kgym check --device {args.device} --no-hacking-check")
    print(f"{'group':8s} {'task':20s} {'candidate':26s} {'verdict':14s} {'deliv':>5s} {'conf':>4s} {'excess ms':>9s} "
          f"{'bound':>7s} {'after':>6s} {'gpu':>6s} {'all':>6s} {'call ms':>9s}  evidence")
    if not args.only_tasks:  # first: the rows the bound must catch
        with tempfile.TemporaryDirectory() as scratch:
            for task, name, bases in HOSTILE:
                if args.tasks and os.path.basename(task) not in args.tasks.split(","):
                    continue
                source = open(os.path.join(ROOT, "tests", "hostile", name + ".py")).read()
                source = "".join(open(os.path.join(ROOT, base)).read() + "\n" for base in bases) + source
                path = os.path.join(scratch, name + ".py")
                with open(path, "w") as f:
                    f.write(source)
                for r in check(args.kgym, args.device, task, path):
                    show("hostile", os.path.basename(task), r)
    for task_dir in [] if args.only_hostile else sorted(glob.glob(os.path.join(ROOT, "tasks", "*", "candidates"))):
        task = os.path.basename(os.path.dirname(task_dir))
        if args.tasks and task not in args.tasks.split(","):
            continue
        for r in check(args.kgym, args.device, task, "all"):
            show("task's", task, r)
    print("conf: batches timed on to confirm a clock rule's finding (ExecResult.confirming_batches); "
          "excess: each evaluation's upper quartile of (its deliveries - the reference runner's same deliveries, a batch's "
          "together), ms; "
          "bound: timing.delivery_bound_ms, above it HACKED; after: the reference's batches right after the "
          f"candidate's over those before (timing.reference_after_ratio; on the GPU above {REFERENCE_AFTER_BOUND} HACKED); "
          "gpu: the GPU time of a timed batch's own kernels over k eval-mode calls' alone, the least of its batches "
          "(ExecResult.batch_gpu_share; below 0.5 HACKED); all: the same over every kernel of its process "
          "(batch_gpu_share_all; recorded only); "
          "call ms: the candidate's timed median per call; '-': no deliveries (the CPU, or outputs copied "
          "inside the requests)")


if __name__ == "__main__":
    main()
