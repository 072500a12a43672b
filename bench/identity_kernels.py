"""Whether the identity answer's error lies in the GPU's work or around it: for each evaluation
whose CUPTI traces were kept (`KGYM_TRACE_ARCHIVE=DIR kgym check --device cuda --json ...`: the
candidate's <id>.jsonl and the reference runner's <id>.reference.jsonl), the GPU time each side's
kernels took per timed batch (phase TRACE_BATCH to TRACE_IDLE on its trace: kernels, copies and memsets
merged where they overlap), the ratio of the two sides' interquartile means beside the speedup the
judge's clock gave. If the kernel ratio moves with the speedup from evaluation to evaluation, the
bias is in the GPU's execution (where each process's memory lies, what its libraries chose); if
the kernels agree while the speedup moves, it is in the requests around them. The gaps column:
each side's median per batch of the time inside its span where the GPU ran nothing of its
(span less busy time: the host's launches and synchronisations inside a forward). Then, for each
evaluation where they differ, the kernel configurations (full name, grid, block) one side ran in
its batches and the other did not: a library that chose another plan in one process (another
tile or split, the same kernel's name cut short) shows there. Last, per evaluation, how much
consecutive batches of one side differ (`batch_noise`), by the judge's clock and by the GPU's
kernels (busy time and span): the timing runs until the speedup's error is small, so where the
clock's batches differ far more than the kernels' the time goes into noise of the requests
around the kernels, not of the GPU's work.

An archive holds one `kgym check` run here: its results name traces by request id, and a later
run's evaluations of the same ids are kept beside them as <id>~2, ... (not read).

    KGYM_TRACE_ARCHIVE=/tmp/traces build/kgym check --device cuda --json --no-hacking-check \
        --task TASK --candidate identity ... > results.jsonl
    python3 bench/identity_kernels.py /tmp/traces results.jsonl
"""
import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu", "sandbox"))
from kgym_sandbox.frames import kgym_pb2  # noqa: E402  the trace's phases are the schema's
import request_stages  # noqa: E402


def records(path: str) -> list:
    out = []
    with open(path) as f:
        for line in f:
            _, _, body = line.partition(" ")
            try:
                out.append(json.loads(body))
            except ValueError:
                pass
    return out


def busy_ns(spans: list) -> int:
    """Time covered by the spans, overlaps counted once."""
    total, end = 0, None
    for start, stop in sorted(spans):
        if end is None or start > end:
            total += stop - start
            end = stop
        elif stop > end:
            total += stop - end
            end = stop
    return total


def batch_windows(recs: list) -> list:
    """(start, end) ns of each batch window: a TRACE_BATCH phase call to the next call."""
    windows, opened = [], None
    for r in recs:
        if "phase" in r:
            if r["phase"].get("kind") == kgym_pb2.TRACE_BATCH:
                opened = r["at_ns"]
            elif opened is not None:
                windows.append((opened, r["at_ns"]))
                opened = None
    return windows


def batch_busy(recs: list, span: bool = False) -> list:
    """GPU busy time (ns) in each batch window (TRACE_BATCH to the next call) of a trace's records;
    with `span`, from its first kernel's start to its last one's end (the gaps between kernels
    counted: a launch-bound side pays them)."""
    windows = batch_windows(recs)
    kernels = [(r["kernel"]["start_ns"], r["kernel"]["end_ns"]) for r in recs if "kernel" in r]
    inside = [[(max(s, a), min(e, b)) for s, e in kernels if e > a and s < b] for a, b in windows]
    if span:
        return [max(e for _, e in w) - min(s for s, _ in w) if w else 0 for w in inside]
    return [busy_ns(w) for w in inside]


def batch_configs(recs: list) -> dict:
    """(full name, grid, block) -> launches, of the kernels a trace shows inside its batch windows."""
    windows = batch_windows(recs)
    found = {}
    for r in recs:
        k = r.get("kernel")
        if k and any(a <= k["start_ns"] < b for a, b in windows):
            key = (k.get("name", "?"), tuple(k.get("grid", [])), tuple(k.get("block", [])))
            found[key] = found.get(key, 0) + 1
    return found


def config_difference(ref: dict, cand: dict) -> list:
    """Lines naming the configurations only one side ran (with how often), none if they agree."""
    return [f"{side} only: {name} grid {list(grid)} block {list(block)} x{n}"
            for side, mine, other in (("reference", ref, cand), ("candidate", cand, ref))
            for (name, grid, block), n in sorted(mine.items()) if (name, grid, block) not in other]


def iqm(values: list) -> float:
    ordered = sorted(values)
    cut = len(ordered) // 4
    return statistics.fmean(ordered[cut:len(ordered) - cut])


def batch_noise(times: list) -> float:
    """How much consecutive batches differ, relatively (request_stages.spread of their logs);
    nan below three batches."""
    return request_stages.spread([math.log(t) for t in times if t > 0])


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    archive, results = sys.argv[1], sys.argv[2]
    print("| task | request | speedup (judge's clock) | kernel busy ratio (ref / cand) | kernel span ratio | "
          "gaps per batch us ref / cand | batches ref / cand |")
    print("|---|---|---|---|---|---|---|")
    differences, noise = [], []
    for line in open(results):
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        name = r.get("request_id", "").replace("/", "_")
        cand_path, ref_path = (os.path.join(archive, name + suffix) for suffix in (".jsonl", ".reference.jsonl"))
        if not (os.path.exists(cand_path) and os.path.exists(ref_path)):
            continue
        # The reference runner also answers single-call requests (the request cost's measure):
        # keep the windows near each side's median, the k-call batches.
        keep = lambda xs: [x for x in xs if x > 0.6 * statistics.median(xs)] if xs else []  # noqa: E731
        ref_recs, cand_recs = records(ref_path), records(cand_path)
        ratios, gaps = [], []
        for recs in (ref_recs, cand_recs):
            busy, span = batch_busy(recs), batch_busy(recs, span=True)
            gaps.append(statistics.median([s - b for b, s in zip(busy, span) if b > 0.6 * statistics.median(busy)] or [0]))
        for span in (False, True):
            cand, ref = keep(batch_busy(cand_recs, span)), keep(batch_busy(ref_recs, span))
            ratios.append(iqm(ref) / iqm(cand) if cand and ref else float("nan"))
        print(f"| {r.get('task_id', '?')} | {name} | {r.get('speedup', 0):.4f} | {ratios[0]:.4f} | {ratios[1]:.4f} | "
              f"{gaps[0] / 1e3:.0f} / {gaps[1] / 1e3:.0f} | {len(ref)} / {len(cand)} |")
        clock = [r.get("reference_batches_ms", [])[1:], r.get("candidate_batches_ms", [])[1:]]
        noise.append((r.get("task_id", "?"), name, [batch_noise(t) for t in clock] +
                      [batch_noise(keep(batch_busy(recs, span))[1:]) for span in (False, True)
                       for recs in (ref_recs, cand_recs)]))
        differences += [f"{name} ({r.get('speedup', 0):.4f}): {d}"
                        for d in config_difference(batch_configs(ref_recs), batch_configs(cand_recs))]
    print("\nkernel configurations one side ran and the other did not:" if differences else
          "\nboth sides ran the same kernel configurations (full name, grid, block) in every evaluation")
    for d in differences:
        print("  " + d)
    print("\n| task | request | batch noise %, clock ref / cand | kernels busy ref / cand | kernels span ref / cand |")
    print("|---|---|---|---|---|")
    for task, name, n in noise:
        print(f"| {task} | {name} | {100 * n[0]:.2f} / {100 * n[1]:.2f} | {100 * n[2]:.2f} / {100 * n[3]:.2f} | "
              f"{100 * n[4]:.2f} / {100 * n[5]:.2f} |")


if __name__ == "__main__":
    main()
