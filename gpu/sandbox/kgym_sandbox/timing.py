"""Interleaved timing of reference and candidate by the judge's clock, on fresh inputs.

Both sides are timed the same way, by the judge's own perf_counter: the reference as one
call and a device synchronisation here; the candidate as one request to its process (which
runs forward and synchronises before it answers), less what such a request costs beyond the
call itself: measured before the candidate's code existed, as the difference between the
runner's own null model called through that very path and the same model called here. Before every call the judge refills the inputs with new
values (the reference's copy and the candidate's) and flushes L2 from its own context (the
cache is the GPU's, so that covers the candidate's context too). No clock of the candidate's
process is read. After each candidate call the judge decides, at random, whether to compare
that call's output with the reference's on the same inputs; the last one always is.
"""
import statistics
import time

import torch


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

    def time_reference_ms(self, reference, inputs: list) -> tuple:
        self.ready()
        t0 = time.perf_counter()
        out = reference(*inputs)
        if self.cuda:
            torch.cuda.synchronize()
        return out, (time.perf_counter() - t0) * 1e3

    def time_candidate_ms(self, candidate, expected: list, phase: str = None) -> tuple:
        self.ready()
        seconds, answer = candidate.timed_call(expected, phase)
        return answer, seconds * 1e3


class NullModel(torch.nn.Module):
    """One small kernel: calibrates what a timed call costs besides the model's own work."""

    def forward(self, x):
        return x + 1


CALIBRATION_CALLS = 100


def calibrate(candidate, device: str) -> float:
    """Seconds a timed request to the candidate process costs beyond what the same call
    costs here (channel, runner, IPC export, context switch), from the medians of null-model
    calls alternated on both sides; the candidate's code is not loaded yet."""
    clock = Clock(device)
    null, x = NullModel(), torch.zeros(1024, device=device)
    candidate.fill([x], "load")
    remote, local = [], []
    with torch.no_grad():
        for i in range(CALIBRATION_CALLS):
            clock.ready()
            remote.append(candidate.timed_call([], null=True)[0])
            _, ms = clock.time_reference_ms(null, [x])
            local.append(ms / 1e3)
    candidate.overhead_s = max(statistics.median(remote) - statistics.median(local), 0.0)
    return candidate.overhead_s


def flat(out) -> list:
    from .compare import flatten
    return flatten(out)


def time_interleaved(reference, candidate, new_inputs, check, reps: int, warmup: int, min_timed_s: float,
                     device: str, seconds: dict, check_this) -> dict:
    """Alternates which side runs first. Stops after `reps`, or earlier once each side has
    been timed for `min_timed_s` and at least 5 reps ran. `check(rep, expected, answer)`
    raises on a wrong timed output; `check_this()` says, after each call, whether to check
    it. Adds where the time went to `seconds`."""
    clock = Clock(device)
    spent = {"timing_warmup": 0.0, "timing_refill": 0.0, "timing_calls": 0.0, "timing_checks": 0.0}
    ref_ms, cand_ms, checked = [], [], 0
    with torch.no_grad():
        t0 = time.perf_counter()
        inputs = new_inputs()
        candidate.fill(inputs, "timing")
        expected = flat(reference(*inputs))
        for _ in range(warmup):
            reference(*inputs)
            candidate.timed_call(expected)
        spent["timing_warmup"] = time.perf_counter() - t0
        for rep in range(reps):
            t0 = time.perf_counter()
            inputs = new_inputs()
            candidate.fill(inputs, "timing")
            t1 = time.perf_counter()
            spent["timing_refill"] += t1 - t0
            for side in (("ref", "cand") if rep % 2 == 0 else ("cand", "ref")):
                if side == "ref":
                    out, ms = clock.time_reference_ms(reference, inputs)
                    ref_ms.append(ms)
                else:
                    answer, ms = clock.time_candidate_ms(candidate, expected)
                    cand_ms.append(ms)
            expected = flat(out)
            t2 = time.perf_counter()
            spent["timing_calls"] += t2 - t1
            last = rep + 1 >= reps or (rep + 1 >= 5 and min(sum(ref_ms), sum(cand_ms)) >= min_timed_s * 1e3)
            if last or check_this():
                check(rep, expected, answer)
                checked += 1
            spent["timing_checks"] += time.perf_counter() - t2
            if last:
                break
    seconds.update(spent)
    return {"reference_ms": ref_ms, "candidate_ms": cand_ms, "checked": checked}


def time_traced(candidate, new_inputs, reps: int) -> list:
    """A few more timed calls of the candidate alone, each traced as phase "timed:<i>" in its
    process, so the executor can check that its kernels ran inside the time the judge saw
    (no unjoined side stream, no work left running past its answer)."""
    clock = Clock("cuda")
    times = []
    with torch.no_grad():
        for rep in range(reps):
            candidate.fill(new_inputs(), "timing")
            _, ms = clock.time_candidate_ms(candidate, [], f"timed:{rep}")
            times.append(ms)
    return times
