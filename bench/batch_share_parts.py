"""What the batch rule (`gpu/profiler/batch_launches.cpp`, `batch_unlike_its_calls`) measures one
call by, part by part, for each candidate trace kept in an archive (`KGYM_TRACE_ARCHIVE=DIR` for
`kgym check` or tests/profile_test; every trace there, <id>~2 ... too): the GPU time of the
candidate's own kernels and of all its process's kernels (copies and memsets left out) in each
eval-mode correctness call (which may run beside the judge's reference) and in each traced call
alone (TRACE_TIMED), their medians, and a timed batch's own and all per call (the median batch over
its calls, k from its own launches over one eval-mode call's). Where the eval-mode calls' median is
far above the traced calls', the eval-mode calls ran slower than the calls alone.

    python3 bench/batch_share_parts.py DIR [DIR ...]
    python3 bench/batch_share_parts.py --kernels DIR [DIR ...]

--kernels: per trace and per own kernel (name and grid: a launch key), its median duration in the
traced calls alone and in the timed batches, and their ratio: a batch whose calls each launch an
idle kernel beside the one doing a whole batch's work (a padded look-ahead) shows its idle key
far below 1, an honest batch's keys near 1.
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu", "sandbox"))
from kgym_sandbox.frames import kgym_pb2  # noqa: E402  the trace's phases are the schema's
from identity_kernels import records  # noqa: E402


def median(values: list) -> float:
    return statistics.median(values) if values else 0.0


def windows(recs: list, kind: int, to_next_of_kind: bool = False) -> list:
    """(start, end) of each phase call of `kind`: to the next phase call, or with
    `to_next_of_kind` to the next call of the same kind (an eval-mode call's work left running
    counts as its own)."""
    calls = [(r["phase"]["kind"], r["at_ns"]) for r in recs if "phase" in r and "at_ns" in r]
    found = []
    for i, (k, at) in enumerate(calls):
        if k != kind:
            continue
        later = [a for kk, a in calls[i + 1:] if not to_next_of_kind or kk == kind]
        found.append((at, later[0] if later else float("inf")))
    return found


def per_window(kernels: list, spans: list, own) -> list:
    """(own ns, all ns, own launches) of each window, a kernel to the window it started in."""
    out = []
    for a, b in spans:
        inside = [k for k in kernels if a <= k["start_ns"] < b]
        mine = [k for k in inside if own(k)]
        out.append((sum(k["end_ns"] - k["start_ns"] for k in mine),
                    sum(k["end_ns"] - k["start_ns"] for k in inside), len(mine)))
    return out


def parts(path: str) -> dict:
    recs = records(path)
    kernels = [r["kernel"] for r in recs if "kernel" in r and r["kernel"]["name"] not in ("[memcpy]", "[memset]")]
    of_phase = lambda kind: [k for k in kernels if k.get("phase", {}).get("kind") == kind]  # noqa: E731
    evals = per_window(of_phase(kgym_pb2.TRACE_EVAL), windows(recs, kgym_pb2.TRACE_EVAL, True),
                       lambda k: k.get("generated"))
    names = {k["name"] for k in of_phase(kgym_pb2.TRACE_EVAL) if k.get("generated")}
    mine = lambda k: k["name"] in names  # noqa: E731
    alone = per_window(of_phase(kgym_pb2.TRACE_TIMED), windows(recs, kgym_pb2.TRACE_TIMED), mine)
    batches = per_window(kernels, windows(recs, kgym_pb2.TRACE_BATCH), mine)
    per_call_launches = median([n for _, _, n in evals])
    k = max(round(median([n for _, _, n in batches]) / per_call_launches), 1) if per_call_launches else 1
    return {"eval_own": [o for o, _, _ in evals], "eval_all": [a for _, a, _ in evals],
            "alone_own": [o for o, _, _ in alone], "alone_all": [a for _, a, _ in alone],
            "batch_own": median([o for o, _, _ in batches]) / k, "batch_all": median([a for _, a, _ in batches]) / k,
            "k": k, "batches": len(batches)}


def kernel_medians(path: str) -> dict:
    """(name, grid) of each own kernel (generated, as in the eval-mode calls) -> (median ns in the
    traced calls alone, median ns in the timed batches, launches alone, launches in batches)."""
    recs = records(path)
    kernels = [r["kernel"] for r in recs if "kernel" in r]
    names = {k["name"] for k in kernels if k.get("generated") and k.get("phase", {}).get("kind") == kgym_pb2.TRACE_EVAL}
    durations = {}
    for slot, kind in ((0, kgym_pb2.TRACE_TIMED), (1, kgym_pb2.TRACE_BATCH)):
        spans = windows(recs, kind)
        for k in kernels:
            if k["name"] in names and any(a <= k["start_ns"] < b for a, b in spans):
                key = (k["name"], tuple(k.get("grid", ())))
                durations.setdefault(key, ([], []))[slot].append(k["end_ns"] - k["start_ns"])
    return {key: (median(alone), median(batch), len(alone), len(batch)) for key, (alone, batch) in durations.items()}


def archived(archives: list):
    """(trace name, path) of each candidate trace in the archives."""
    for archive in archives:
        for root, _, files in os.walk(archive):
            for name in sorted(files):
                if name.endswith(".jsonl") and not name.endswith(".reference.jsonl"):
                    yield name[:-6], os.path.join(root, name)


def print_kernels(archives: list) -> None:
    print("| trace | kernel (grid) | alone us (n) | in batches us (n) | batch / alone |")
    print("|---|---|---|---|---|")
    for name, path in archived(archives):
        for (kernel, grid), (alone, batch, n_alone, n_batch) in sorted(kernel_medians(path).items()):
            ratio = f"{batch / alone:.2f}" if alone and n_batch else "-"
            print(f"| {name} | {kernel[:40]} {list(grid)} | {alone / 1e3:.1f} ({n_alone}) | {batch / 1e3:.1f} ({n_batch}) "
                  f"| {ratio} |")


def us(values) -> str:
    return " ".join(f"{v / 1e3:.1f}" for v in values)


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    if sys.argv[1] == "--kernels":
        return print_kernels(sys.argv[2:])
    print("| trace | eval-mode calls own us | median own / all | traced calls own us | median own / all | "
          "batch per call own / all (k) |")
    print("|---|---|---|---|---|---|")
    for name, path in archived(sys.argv[1:]):
        p = parts(path)
        if not p["eval_own"]:
            continue
        print(f"| {name} | {us(p['eval_own'])} | {median(p['eval_own']) / 1e3:.1f} / {median(p['eval_all']) / 1e3:.1f} "
              f"| {us(p['alone_own'])} | {median(p['alone_own']) / 1e3:.1f} / {median(p['alone_all']) / 1e3:.1f} "
              f"| {p['batch_own'] / 1e3:.1f} / {p['batch_all'] / 1e3:.1f} ({p['k']}, {p['batches']} batches) |")


if __name__ == "__main__":
    main()
