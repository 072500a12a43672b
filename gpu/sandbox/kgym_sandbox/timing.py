"""Interleaved timing of reference and candidate by the judge's clock, in batches.

Both sides are timed the same way, by the judge's own perf_counter: a batch of k calls run
back to back, each on an input set of its own (fresh values, so caching on input contents
gains nothing), each call's output copied into a buffer of the judge's, then one device
synchronisation. The reference's batch runs here; the candidate's is one request to its
process, less what a request costs besides its calls (`plan`: before the candidate's code
existed, a batch of null calls through that very path, touching the same input and output
bytes as the real calls, against the same batch here). A batch amortises that cost, which on
a GPU shared by two processes is mostly the switch between their contexts and first touches
of freshly written memory in the candidate's (0.2-0.8 ms per request on an H100). Before each batch the judge
writes new inputs and flushes L2 from its own context (the cache is the GPU's). No clock of
the candidate's process is read. After each batch the judge compares, at random, a fifth of
its calls' outputs with the reference's on the same inputs, and the last call of all always.
"""
import math
import statistics
import time

import torch

from .compare import flatten as flat

BATCH_TARGET_S = 0.05      # a batch this long makes the per-request cost ~0.5% before calibration
MAX_BATCH = 64
BATCH_MEMORY_BYTES = 4 << 30  # inputs and outputs of a batch, each side


def interquartile_mean(times_ms: list) -> float:
    """Mean of the middle half: the sorted values from index n//4 to n - n//4."""
    ordered = sorted(times_ms)
    cut = len(ordered) // 4
    middle = ordered[cut:len(ordered) - cut]
    return statistics.fmean(middle)


def stats(times_ms: list) -> dict:
    if not times_ms:
        return {"n": 0}
    return {"median_ms": statistics.median(times_ms), "mean_ms": statistics.fmean(times_ms),
            "stdev_ms": statistics.stdev(times_ms) if len(times_ms) > 1 else 0.0,
            "min_ms": min(times_ms), "n": len(times_ms), "iqm_ms": interquartile_mean(times_ms)}


class Clock:
    """The judge's clock; on the GPU it first flushes L2 and waits for the device."""

    def __init__(self, device: str):
        self.cuda = device == "cuda"
        if self.cuda:
            l2 = torch.cuda.get_device_properties(0).L2_cache_size
            self.flush_buffer = torch.empty(max(2 * l2, 1 << 20), dtype=torch.uint8, device="cuda")

    def ready(self) -> None:
        if self.cuda:
            self.flush_buffer.zero_()
            torch.cuda.synchronize()

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()


def null_call(inputs: list, slot: list) -> None:
    """A call's memory traffic without its work: reads every input, writes every output buffer."""
    for x in inputs:
        if isinstance(x, torch.Tensor) and x.numel():
            x.sum()
    for out in slot:
        out.zero_()


CALIBRATION_REQUESTS = 20


def run_reference_batch(reference, sets: list, slots: list, clock: Clock) -> float:
    """Seconds for the reference's calls on `sets`, outputs copied into `slots`, then a sync."""
    t0 = time.perf_counter()
    for inputs, slot in zip(sets, slots):
        for dst, src in zip(slot, flat(reference(*inputs))):
            dst.copy_(src)
    clock.sync()
    return time.perf_counter() - t0


def plan(reference, candidate, new_inputs, device: str, warmup: int, reps: int) -> dict:
    """Before the candidate's code is loaded: times the reference to choose the calls per
    batch, shares that many input sets and output buffers with the candidate process, and
    measures what a timed request costs there besides its calls: batches of null calls over the
    same bytes through the runner's very path, against the same batch here (medians)."""
    clock = Clock(device)
    with torch.no_grad():
        inputs = new_inputs()
        expected = flat(reference(*inputs))
        one = [[torch.empty_like(t) for t in expected]]
        for _ in range(max(warmup, 1)):
            clock.ready()
            call_s = run_reference_batch(reference, [inputs], one, clock)
        k = min(batch_size(call_s, tensor_bytes(inputs) + tensor_bytes(expected)), max(reps, 1))
        sets = [inputs] + [new_inputs() for _ in range(k - 1)]
        slots = [[torch.empty_like(t) for t in expected] for _ in range(k)]
        candidate.fill_sets(sets, "load")
        candidate.expect(expected, "load", k)
        remote, local = [], []
        for _ in range(CALIBRATION_REQUESTS):
            candidate.fill_sets(sets, "load")  # as before every timed batch: freshly written inputs
            clock.ready()
            remote.append(candidate.timed_batch(k, null=True)[0])
            clock.ready()
            t0 = time.perf_counter()
            for inputs, slot in zip(sets, slots):
                null_call(inputs, slot)
            clock.sync()
            local.append(time.perf_counter() - t0)
    candidate.overhead_s = max(statistics.median(remote) - statistics.median(local), 0.0)
    return {"batch": k, "overhead_s": candidate.overhead_s}


def tensor_bytes(values: list) -> int:
    return sum(t.numel() * t.element_size() for t in values if isinstance(t, torch.Tensor))


def batch_size(call_s: float, set_bytes: int) -> int:
    """Calls per batch: long enough to amortise a request, within the memory budget."""
    by_time = math.ceil(BATCH_TARGET_S / max(call_s, 1e-6))
    by_memory = BATCH_MEMORY_BYTES // max(set_bytes, 1)
    return int(max(1, min(by_time, by_memory, MAX_BATCH)))


def time_interleaved(reference, candidate, new_inputs, check, reps: int, k: int, min_timed_s: float,
                     device: str, seconds: dict, check_this) -> dict:
    """Batches of k calls a side (from `plan`), alternating which side runs first. Stops after
    `reps` calls per side, or earlier once each side has been timed for `min_timed_s` and at
    least 5 calls ran. `check(call, expected, given)` raises on a wrong timed output;
    `check_this()` says, per call after its batch, whether to compare it. Adds where the time
    went to `seconds`."""
    clock = Clock(device)
    spent = {"timing_warmup": 0.0, "timing_refill": 0.0, "timing_calls": 0.0, "timing_checks": 0.0}
    ref_ms, cand_ms, checked = [], [], 0
    with torch.no_grad():
        t0 = time.perf_counter()
        sets = [new_inputs() for _ in range(k)]
        slots = [[torch.empty_like(t) for t in flat(reference(*sets[0]))] for _ in range(k)]
        candidate.fill_sets(sets, "timing")
        run_reference_batch(reference, sets, slots, clock)  # one batch a side to warm up
        candidate.timed_batch(k)
        spent["timing_warmup"] = time.perf_counter() - t0
        calls, batch = 0, 0
        while True:
            t0 = time.perf_counter()
            sets = [new_inputs() for _ in range(k)]
            candidate.fill_sets(sets, "timing")
            t1 = time.perf_counter()
            spent["timing_refill"] += t1 - t0
            for side in (("ref", "cand") if batch % 2 == 0 else ("cand", "ref")):
                clock.ready()
                if side == "ref":
                    ref_ms += [run_reference_batch(reference, sets, slots, clock) * 1e3 / k] * k
                else:
                    cand_ms += [candidate.timed_batch(k)[0] * 1e3 / k] * k
            t2 = time.perf_counter()
            spent["timing_calls"] += t2 - t1
            calls += k
            batch += 1
            last = calls >= reps or (calls >= 5 and min(sum(ref_ms), sum(cand_ms)) >= min_timed_s * 1e3)
            for i in range(k):
                if (last and i == k - 1) or check_this():
                    check(calls - k + i, slots[i], candidate.slot_output(i))
                    checked += 1
            spent["timing_checks"] += time.perf_counter() - t2
            if last:
                break
    seconds.update(spent)
    return {"reference_ms": ref_ms, "candidate_ms": cand_ms, "checked": checked}


def time_traced(candidate, new_inputs, reps: int) -> list:
    """A few more timed calls of the candidate alone, one per request, each traced as phase
    "timed:<i>" in its process, so the executor can check that its kernels ran inside the
    time the judge saw (no work on a side stream or left running past its answer)."""
    clock = Clock("cuda")
    times = []
    with torch.no_grad():
        for rep in range(reps):
            candidate.fill_sets([new_inputs()], "timing")
            clock.ready()
            times.append(candidate.timed_batch(1, f"timed:{rep}")[0] * 1e3)
    return times
