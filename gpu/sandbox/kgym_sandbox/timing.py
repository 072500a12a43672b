"""Interleaved timing of reference and candidate on the same, freshly refilled inputs."""
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
    """Times one call: CUDA events on the GPU (after an L2 flush), perf_counter on the CPU."""

    def __init__(self, device: str):
        self.cuda = device == "cuda"
        if self.cuda:
            l2 = torch.cuda.get_device_properties(0).L2_cache_size
            self.flush_buffer = torch.empty(max(2 * l2, 1 << 20), dtype=torch.uint8, device="cuda")
            self.start = torch.cuda.Event(enable_timing=True)
            self.end = torch.cuda.Event(enable_timing=True)
            self.synchronize = torch.cuda.synchronize

    def time_ms(self, call):
        if not self.cuda:
            t0 = time.perf_counter()
            out = call()
            return out, (time.perf_counter() - t0) * 1e3
        self.flush_buffer.zero_()
        self.start.record()
        out = call()
        self.end.record()
        self.synchronize()
        return out, self.start.elapsed_time(self.end)


def time_interleaved(reference, candidate, inputs: list, refill, reps: int, warmup: int,
                     min_timed_s: float, device: str, seconds: dict):
    """Alternates which side runs first; refills the inputs in place before every rep, so a
    candidate that memoizes on its input buffers returns stale values (checked by the caller
    on the outputs of the last rep). Stops after `reps`, or earlier once each side has been
    timed for `min_timed_s` and at least 5 reps ran. Adds where the time went to `seconds`."""
    clock = Clock(device)
    spent = {"timing_warmup": 0.0, "timing_refill": 0.0, "timing_calls": 0.0}
    t0 = time.perf_counter()
    with torch.no_grad():
        for _ in range(warmup):
            reference(*inputs)
            candidate(*inputs)
        spent["timing_warmup"] = time.perf_counter() - t0
        ref_ms, cand_ms = [], []
        ref_out = cand_out = None
        for rep in range(reps):
            t0 = time.perf_counter()
            refill(rep)
            t1 = time.perf_counter()
            spent["timing_refill"] += t1 - t0
            sides = [("ref", reference), ("cand", candidate)]
            for side, model in (sides if rep % 2 == 0 else sides[::-1]):
                out, ms = clock.time_ms(lambda: model(*inputs))
                if side == "ref":
                    ref_out = out
                    ref_ms.append(ms)
                else:
                    cand_out = out
                    cand_ms.append(ms)
            spent["timing_calls"] += time.perf_counter() - t1
            if rep + 1 >= 5 and min(sum(ref_ms), sum(cand_ms)) >= min_timed_s * 1e3:
                break
    seconds.update(spent)
    return ref_ms, cand_ms, ref_out, cand_out


def time_traced(candidate, inputs: list, refill, reps: int, tracer) -> list:
    """A few more timed calls of the candidate alone, each traced as phase "timed:<i>", so the
    executor can check that its kernels ran inside the timed region (no unjoined side
    stream, no work left running, no tampered timer). Event times are returned."""
    clock = Clock("cuda")
    times = []
    with torch.no_grad():
        for rep in range(reps):
            refill(10_000 + rep)
            clock.flush_buffer.zero_()
            clock.synchronize()
            tracer.phase(f"timed:{rep}")
            clock.start.record()
            candidate(*inputs)
            clock.end.record()
            clock.synchronize()
            tracer.phase("checks")
            times.append(clock.start.elapsed_time(clock.end))
    return times
