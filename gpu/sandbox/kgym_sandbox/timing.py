"""Interleaved timing of reference and candidate by the judge's clock, in batches.

Both sides are timed the same way, by the judge's own perf_counter around one request to a
process of their own: the candidate's process, and the reference runner (the task's Model
served by the very same runner code). A request is a batch of k calls run back to back, each
on an input set of its own (fresh values, so caching on input contents gains nothing), then
one device synchronisation. On the GPU the outputs of the calls the judge then chooses to
compare reach its buffers on a request of their own, off the clock (a copy as long as a
memory-bound forward would otherwise pull its speedup towards 1: README, trust model); on
the CPU, and for outputs a plain copy cannot move, each call's output is copied inside the
request. What a
request costs besides its calls (the channel, the switch between CUDA contexts, first
touches of freshly written memory: 0.2-0.8 ms on an H100) is then alike on both sides; a
batch amortises it, and `request_cost` measures it on the reference runner (requests of one
call against its batches) so it is taken off both. Before each
batch the judge writes new inputs and flushes L2 from its own context (the cache is the
GPU's). No clock of the candidate's process is read. After each batch the judge compares, at
random, a share of its calls' outputs with the reference's on the same inputs, and the last
call of all always. Where the placement of a process's intermediates decides its speed (an
H200), EvalOptions.placement REDRAWN moves both sides' every few batches and times each from
its fast mode (bench/RESULTS.md, "Where the intermediates lie"); CHECKED moves them alike but times each
as kept unless one shows two modes.
"""
import math
import statistics
import time

import torch

from . import device_memory, packing
from .compare import flatten as flat

BATCH_TARGET_S = 0.025     # a batch this long makes the per-request cost ~1% before calibration (README, timing)
MAX_BATCH = 64
MIN_STOPPING_PAIRS = 10  # batch pairs before the timing may stop on its precision


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


CALIBRATION_REQUESTS = 5


OVERLAP_MAX_BYTES = 1 << 30  # inputs and outputs of one set; above it, no warm-up during the trials


def start_plan(reference, timed_reference, inputs: list, warmup: int) -> dict:
    """The first half of `plan`, at the start of the trials: the reference's outputs for
    `inputs` (fresh ones: the pattern of the output buffers), and the reference runner's
    warm-up calls, sent without waiting for them: a fresh process's first calls (kernels
    loaded, library heuristics: ~0.3 s on an H100) then overlap the candidate's correctness
    trials. Not for a set above OVERLAP_MAX_BYTES (`overlaps`): the runner's buffers would
    crowd the trials' memory (at KernelBench's level-1 sizes, enough for cuDNN to choose other
    algorithms in the candidate's process than in the judge's), and the saving is small beside
    such a set's evaluation; `plan` warms it up then."""
    with torch.no_grad():
        expected = flat(reference(*inputs))
    set_bytes = tensor_bytes(inputs) + tensor_bytes(expected)
    started = {"expected": [t.to("meta") for t in expected], "set_bytes": set_bytes, "warmup": max(warmup, 1),
               "warming": None, "inputs": packing.meta(inputs)}
    if overlaps(set_bytes):
        warm_up(timed_reference, inputs, expected, started)
    # Shapes and dtypes only from here on (meta tensors): at KernelBench's sizes one output is
    # up to 8 GiB, and the trials come next.
    return started


def overlaps(set_bytes: int) -> bool:
    """Whether work of two processes on sets this large may run at once (the GPU's memory)."""
    return set_bytes <= OVERLAP_MAX_BYTES


def warm_up(timed_reference, inputs: list, expected: list, started: dict) -> None:
    timed_reference.fill_sets([inputs], "load")
    timed_reference.expect(expected, "load", 1)
    started["warming"] = timed_reference.start_batch(1, passes=started["warmup"])


def plan(timed_reference, started: dict, device: str, reps: int, new_inputs, batch_memory_bytes: int) -> dict:
    """The calls per batch, from the timed reference's time per request of one call (after
    the warm-up `start_plan` sent, or one sent now) and the batch's memory budget (inputs and
    outputs, each side: EvalOptions.batch_memory_mb), and the reference's outputs as a pattern
    for the output buffers. Any GPU work of the candidate's process meanwhile falls outside
    its request windows (HACKED)."""
    if started["warming"] is None:  # its set made where the runner reads it: none of the judge's own
        targets = timed_reference.reserve_sets(1, started["inputs"])
        warm_up(timed_reference, new_inputs(targets[0] if targets else ()), started["expected"], started)
    timed_reference.finish_batch(started["warming"])
    call_s = statistics.median(single_calls(timed_reference, Clock(device)))
    if device == "cuda":
        batch_memory_bytes = batch_budget(batch_memory_bytes, torch.cuda.mem_get_info()[0])
    return {"batch": calls_per_batch(batch_size(call_s, started["set_bytes"], batch_memory_bytes), reps), "call_s": call_s,
            "expected": started["expected"]}


MIN_BATCHES = 4  # a side's timed calls come in at least this many batches


def calls_per_batch(wanted: int, reps: int) -> int:
    """`wanted` calls a batch (batch_size), but at most a quarter of the timed calls (`reps`):
    the timing always sees several batches (the speedup's error needs pairs of them, and a
    candidate honest in its first batch only must meet a second)."""
    return max(1, min(wanted, reps // MIN_BATCHES))


CHECK_SHARE = 0.1       # of the timed calls compared at least, each chosen at random after its batch
CHECKED_WORK_S = 0.002  # the calls a batch has compared carry this much of the faster side's time, on average


def check_share(batch_s: float, calls: int) -> float:
    """The share of a batch's calls compared: CHECK_SHARE, or more where the batch (the faster
    side's, by the judge's clock) of `calls` calls is short, so that the chosen calls carry
    CHECKED_WORK_S of its time on average. A candidate that skips its calls' work and does only
    the chosen ones in the batch's deliveries (off the clock, its trace off) then adds there 2 ms
    times the ratio of the work it skipped to the time it shows: what doubles its speed shows as
    four times the delivery rule's floor (DELIVERY_FLOOR_MS) in a batch's deliveries together
    (delivery_excess_ms by the batch: on an H200 they came in 17 a batch for the GELU task, each
    0.31 ms beyond; at a tenth, its fused answer, 22 calls a batch, showed about 0.2 ms).
    Calls of CHECKED_WORK_S or more need no more: work that moves their speed by a quarter is the
    rule's floor in every delivery."""
    if batch_s >= CHECKED_WORK_S * max(calls, 1):
        return CHECK_SHARE
    return min(1.0, max(CHECK_SHARE, CHECKED_WORK_S / max(batch_s, 1e-12)))


FREE_MEMORY_SHARE = 6  # of the GPU's free memory, at most one side's batch


def batch_budget(wanted_bytes: int, free_bytes: int) -> int:
    """A side's batch memory: what the options ask, but at most a sixth of the GPU's free
    memory (two sides' batches, and room beside them for the models' own work): KernelBench's
    largest sets keep one call a batch."""
    return max(min(wanted_bytes, free_bytes // FREE_MEMORY_SHARE), 0)


def request_cost(one: list, many: list, n: int) -> float:
    """What a request costs besides its calls (the channel, the switch between CUDA contexts):
    with T(n) the time of a request of n calls, L2 flushed before each, T(n) = cost + n x call,
    so cost = (n T(1) - T(n)) / (n - 1), from the medians of requests of one call (`one`) and of
    n calls (`many`); kept between 0 and half of T(1)."""
    t1, tn = statistics.median(one), statistics.median(many)
    return min(max((n * t1 - tn) / (n - 1), 0.0), t1 / 2)


def bounded_cost(cost: float, batches: list) -> float:
    """The request cost to take off, at most half of the fastest batch of either side: a cost
    estimated from noisy single calls (a loaded CPU) must not bring a side's time to 0."""
    return min(cost, 0.5 * min(batches)) if batches else cost


def single_calls(side, clock: Clock, passes: int = 1) -> list:
    times = []
    for _ in range(CALIBRATION_REQUESTS):
        clock.ready()
        times.append(side.timed_batch(1, raw=True, passes=passes)[0])
    return times


def tensor_bytes(values: list) -> int:
    return sum(t.numel() * t.element_size() for t in values if isinstance(t, torch.Tensor))


def ratio_rse(ref_batches: list, cand_batches: list, min_pairs: int = 3) -> float:
    """The relative standard error of the speedup, from the paired batches' log-ratios (the
    first pair left out: no warm-up batch runs before it), with a robust scale (1.4826 times
    their median absolute deviation): the few slow batches a GPU shows are what the IQM leaves
    out, and they would swamp a standard deviation. Infinite below `min_pairs` pairs: over fewer,
    on an H100, the estimate missed a drift of the first half second by up to 10 times."""
    ratios = [math.log(r / c) for r, c in zip(ref_batches[1:], cand_batches[1:]) if r > 0 and c > 0]
    if len(ratios) < min_pairs:
        return math.inf
    return robust_error(ratios)


def robust_error(values: list) -> float:
    """1.4826 times the median absolute deviation, over the square root of the count."""
    middle = statistics.median(values)
    return 1.4826 * statistics.median(abs(x - middle) for x in values) / math.sqrt(len(values))


def placement_rse(ref_batches: list, cand_batches: list, kept: set, every: int, min_placements: int = 3) -> float:
    """ratio_rse where placements were redrawn: the kept pairs' log-ratios averaged over each
    placement (`every` batches) first, the robust error then taken over the placements.
    The batches of one placement share its speed (within a mode too, by a few per cent on an
    H200), so counted one by one they claimed an error several times too small."""
    means = []
    for start in range(0, len(ref_batches), every):
        ratios = [math.log(ref_batches[i] / cand_batches[i]) for i in range(start, min(start + every, len(ref_batches)))
                  if i > 0 and i in kept and ref_batches[i] > 0 and cand_batches[i] > 0]
        if ratios:
            means.append(statistics.fmean(ratios))
    return robust_error(means) if len(means) >= min_placements else math.inf


def within_placement_rse(ref_batches: list, cand_batches: list, every: int, min_pairs: int = 3) -> float:
    """ratio_rse where placements were redrawn but are not averaged over (PLACEMENT_CHECKED, while
    neither side shows two modes): the log-ratios' spread taken from the differences between
    neighbouring pairs of one placement, in which a placement's shift of a percent or two (an
    H200's sub-modes) cancels; 1.4826 times their median absolute deviation over sqrt(2) (a
    difference of two has twice the variance), over the square root of the pairs (the first
    left out, as in ratio_rse). What placements add is left out, as kept placements leave it
    out; counted in, the error stayed above 0.001 to the cap for half of level 2 (bench/RESULTS.md)."""
    ratios = {i: math.log(r / c) for i, (r, c) in enumerate(zip(ref_batches, cand_batches)) if i > 0 and r > 0 and c > 0}
    steps = [ratios[i] - ratios[i - 1] for i in ratios if i - 1 in ratios and (i - 1) // every == i // every]
    if len(ratios) < min_pairs or len(steps) < 2:
        return math.inf
    middle = statistics.median(steps)
    spread = 1.4826 * statistics.median(abs(d - middle) for d in steps) / math.sqrt(2)
    return spread / math.sqrt(len(ratios))


MODE_GAP = 0.08     # batch times this far apart (relative) are two placements' modes (README, placement)
MODE_LEAST = 2      # batches a fast mode needs


def fast_mode(times: list, gap: float = MODE_GAP, least: int = MODE_LEAST) -> list:
    """The indices of the batches in a side's fast mode: with the times sorted, the widest
    relative step between neighbours that has at least `least` batches on either side; when that step
    is above `gap`, the batches below it, otherwise every batch. On an H200 a process's time
    depends on where in physical memory its intermediates lie (4.8 or 6.3 ms a call for one
    problem), and a side whose placements were redrawn shows both."""
    order = sorted(range(len(times)), key=lambda i: times[i])
    widest, cut = 0.0, len(order)
    for i in range(least, len(order) - least + 1):  # `least` on either side: one slow batch is no mode
        below, above = times[order[i - 1]], times[order[i]]
        if below > 0 and above / below - 1 > widest:
            widest, cut = above / below - 1, i
    return sorted(order[:cut]) if widest > gap else list(range(len(times)))


def two_modes(times: list) -> bool:
    return len(fast_mode(times)) < len(times)


def bimodal(ref_batches: list, cand_batches: list) -> bool:
    """Whether either side shows two modes."""
    return two_modes(ref_batches) or two_modes(cand_batches)


def checks_whole_batch(cand_batches: list) -> bool:
    """Whether every call of the candidate's latest batch is compared, where a side's time comes
    from its fast mode: the first MODE_LEAST + 1 batches, and any later batch faster by more than
    the mode gap than MODE_LEAST of the batches before it but the first. A candidate that skipped
    its work in a few batches would otherwise make them its fast mode, unchecked but for the
    tenth of calls chosen at random; `timed_batches` times no batch of a fast mode but those
    compared whole, and a batch left unchecked here is within the gap of batches compared whole
    (the MODE_LEAST-th slowest after the first never falls, and starts at compared ones). A fast
    mode needs MODE_LEAST batches above its gap (fast_mode), so one slow batch makes none of the
    later ones part of it, and the first (a cold start: no warm-up batch runs before it) is left
    out: against the slowest batch before, a cold first batch or one hiccup had every later batch
    of a steady candidate compared whole (KernelBench level 1, one call a batch: up to 500 calls
    of 3 GiB outputs, 6.7 s of a 16.6 s evaluation on an H200)."""
    before = sorted(cand_batches[1:-1])
    return len(before) < MODE_LEAST or cand_batches[-1] * (1 + MODE_GAP) < before[-MODE_LEAST]


def timed_batches(ref_batches: list, cand_batches: list, whole: set) -> tuple:
    """The batches each side's time comes from, where placements were redrawn: the reference's
    fast mode; the candidate's fast mode, of it only the batches compared whole (`whole`) when it
    has two modes (checks_whole_batch); every batch where fewer than MODE_LEAST are left."""
    cand = fast_mode(cand_batches)
    if len(cand) < len(cand_batches):
        cand = [i for i in cand if i in whole]
        if len(cand) < MODE_LEAST:
            cand = list(range(len(cand_batches)))
    return fast_mode(ref_batches), cand


def fast_pairs(ref_batches: list, cand_batches: list) -> set:
    """The batch pairs in which both sides ran in their fast mode."""
    return set(fast_mode(ref_batches)) & set(fast_mode(cand_batches))


class StopRule:
    """When the interleaved timing has measured enough: after `reps` calls a side; once both
    sides have `max_timed_s`; or once both have `min_timed_s` and the speedup's relative
    standard error is at most `precision` (0: never early). A steady kernel stops at the floor,
    a noisy one gets up to the cap, so the timing costs what the precision needs.
    With placements redrawn every `every` batches (0: kept): not before `MIN_PLACEMENTS` placements a side, the error
    taken over the placements' pairs in which both sides ran in their fast mode (placement_rse),
    and, while either side shows two modes, a cap of `REDRAW_CAP` times max_timed_s. `checked`
    (PLACEMENT_CHECKED): while neither side shows two modes, the error within placements
    (within_placement_rse) and the kept cap."""

    def __init__(self, reps: int, min_timed_s: float, max_timed_s: float = 0.0, precision: float = 0.0,
                 every: int = 0, checked: bool = False):
        self.reps, self.min_timed_s, self.precision, self.every = reps, min_timed_s, precision, every
        self.max_timed_s = max(max_timed_s, min_timed_s)
        self.checked = checked and every > 0

    def within_placements(self, ref_batches: list, cand_batches: list) -> bool:
        """Whether the error is taken within placements: checked, and neither side in two modes."""
        return self.checked and not bimodal(ref_batches, cand_batches)

    def done(self, ref_batches: list, cand_batches: list, calls: int) -> bool:
        if calls >= self.reps:
            return True
        if calls < 5:
            return False
        timed = min(sum(ref_batches), sum(cand_batches))
        if self.every:
            if placements(len(ref_batches), self.every) < MIN_PLACEMENTS:
                return False
            two = bimodal(ref_batches, cand_batches)
            if self.checked and not two:  # within_placements
                return timed >= self.max_timed_s or (timed >= self.min_timed_s and self.precision > 0 and within_placement_rse(
                    ref_batches, cand_batches, self.every, MIN_STOPPING_PAIRS) <= self.precision)
            if timed >= self.max_timed_s * (REDRAW_CAP if two else 1):
                return True
            kept = fast_pairs(ref_batches, cand_batches)  # whole checks are not known here
            return timed >= self.min_timed_s and self.precision > 0 and \
                placement_rse(ref_batches, cand_batches, kept, self.every, MIN_STOPPING_PLACEMENTS) <= self.precision
        if timed >= self.max_timed_s:
            return True
        return timed >= self.min_timed_s and self.precision > 0 and \
            ratio_rse(ref_batches, cand_batches, MIN_STOPPING_PAIRS) <= self.precision

    def confirming(self, ref_batches: list, cand_batches: list) -> bool:
        """Whether a clock rule's finding (clock_findings) on the batches so far is to be timed
        on before it is ruled: fewer than CONFIRM_BATCHES batches a side, and within REDRAW_CAP
        times max_timed_s."""
        return len(cand_batches) < CONFIRM_BATCHES and \
            min(sum(ref_batches), sum(cand_batches)) < self.max_timed_s * REDRAW_CAP


REDRAW_EVERY = 2    # batches timed at one placement before it is drawn anew, at least
PLACEMENT_S = 0.04  # a placement's batches take this long at least (placement_batches)
MAX_PLACEMENT_BATCHES = 16  # so that MIN_STOPPING_PLACEMENTS placements stay within the timing's cap
MIN_PLACEMENTS = 4  # placements a side is timed at, at least, when they are redrawn
MIN_STOPPING_PLACEMENTS = 8  # placements with fast pairs before the timing may stop on its precision
REDRAW_CAP = 2      # times max_timed_s a side may be timed while its batches show two modes
# Batches a side before the clock rules (delivery, reference after) rule: their quantiles over a
# few batches fire on noise (H200, hostile suite at 20 timed calls, 4 batches: an honest fused
# GELU answer's deliveries 0.763 ms beyond, bound 0.628, in two of its four batches; over 40
# batches, 18 runs of it, the upper quartile was 0.09-0.29 ms). A finding on fewer is timed on
# (StopRule.confirming): noise goes, work done every batch stays.
CONFIRM_BATCHES = 12


def placement_batches(k: int, call_s: float) -> int:
    """Batches timed at one placement, where they are redrawn: REDRAW_EVERY, or as many as take
    PLACEMENT_S where batches are short (one call a batch at KernelBench's level-1 sizes: a move
    every two calls there cost more than the calls), at most MAX_PLACEMENT_BATCHES. `call_s`:
    the reference's time for a request of one call (`plan`)."""
    wanted = math.ceil(PLACEMENT_S / max(k * call_s, 1e-6))
    return min(max(REDRAW_EVERY, wanted), MAX_PLACEMENT_BATCHES)


def placements(batches: int, every: int) -> int:
    """How many placements `batches` batches were timed at, one drawn every `every`."""
    return (batches + every - 1) // every


def order(batch: int, every: int = 0) -> tuple:
    """Which side runs batch number `batch` (from 0) first: in turn; with placements redrawn
    every `every` batches, in turn within each placement and each placement starting with the
    side the last did not, so that each side runs first right after a move as often as the other."""
    turn = batch + (batch // every if every else 0)
    return ("ref", "cand") if turn % 2 == 0 else ("cand", "ref")


def redraws_before(batch: int, every: int) -> bool:
    """Whether both sides' placements are drawn anew before batch number `batch` (from 0)."""
    return batch > 0 and batch % every == 0


def batch_size(call_s: float, set_bytes: int, memory_bytes: int) -> int:
    """Calls per batch: long enough to amortise a request, within the memory budget."""
    by_time = math.ceil(BATCH_TARGET_S / max(call_s, 1e-6))
    by_memory = memory_bytes // max(set_bytes, 1)
    return int(max(1, min(by_time, by_memory, MAX_BATCH)))


DELIVERY_FLOOR_MS = 0.5   # a candidate's deliveries may take this much beyond the reference runner's ...
DELIVERY_SHARE = 0.25     # ... or this share of the reference runner's, where that is more (README, delivery)


def upper_quartile(values: list) -> float:
    """The value n // 4 places from the largest (for up to three values the largest): what more
    than a quarter of them reach. A candidate gains nothing from the judge's interquartile mean
    unless more than a quarter of its batches are fast (it cuts n // 4 from each end), so the
    rules on what such batches leave behind (work in a delivery, work while the reference runs)
    look at this quantile: a quarter of its deliveries or of the reference's batches may be
    disturbed at random without moving it (one of an honest answer's four delivered batches,
    unprivileged on an H200, 0.68 ms beyond), more than a quarter cannot be hidden from it."""
    ordered = sorted(values)
    return ordered[len(ordered) - 1 - len(ordered) // 4]


def by_batch(values: list, parts: list) -> list:
    """`values` (one a delivery, in order) summed over each batch's deliveries (`parts`: how many
    each batch had, ExecResult's delivery_parts); as they are where `parts` does not cover them
    (results recorded before it was)."""
    if not parts or sum(parts) != len(values):
        return list(values)
    sums, at = [], 0
    for n in parts:
        sums.append(sum(values[at:at + n]))
        at += n
    return sums


def delivery_excess_ms(reference_ms: list, candidate_ms: list, parts: list = ()):
    """What the candidate's deliveries took beyond the reference runner's delivery of the same
    calls (ms, by the judge's clock; ExecResult's delivery_ms and reference_delivery_ms, paired
    in order), a batch's deliveries together (`parts`, ExecResult's delivery_parts): the upper
    quartile of the paired differences; None where they do not pair (a side that copied inside its
    requests delivers nothing). Both sides only copy the same bytes, so an honest candidate's
    excess is the two processes' scheduling noise (on an H200 no single one of 1,252 deliveries
    over 70 KernelBench problem-runs beyond the bound; the tasks' candidates' batches, up to 10
    deliveries each, +0.23 ms at most), and work done in a delivery, off the judge's clock (by the
    candidate's process with its trace off, or by a helper writing the judge's slots), adds its
    whole time to the batch it is done in. By the batch, not the delivery: where the judge's
    buffers hold few of a batch's compared calls, each delivery carries a few of them, and work
    left for the compared calls only (`skips_unchosen_calls`: about 0.3 ms a delivery on an H200)
    hides under the bound in every one of them while the batch's deliveries add up (5 ms)."""
    if not candidate_ms or len(reference_ms) != len(candidate_ms):
        return None
    return upper_quartile(by_batch([c - r for r, c in zip(reference_ms, candidate_ms)], parts))


def delivery_bound_ms(reference_ms: list, parts: list = ()) -> float:
    """How much longer than the reference runner's the candidate's deliveries of a batch may take
    (ms): DELIVERY_FLOOR_MS, or DELIVERY_SHARE of the median of the reference runner's (a batch's
    together, `parts`) where that is more (a large output's copy varies by more)."""
    return max(DELIVERY_FLOOR_MS, DELIVERY_SHARE * statistics.median(by_batch(reference_ms, parts))) \
        if reference_ms else DELIVERY_FLOOR_MS


def delivery_work(reference_ms: list, candidate_ms: list, parts: list = ()) -> str:
    """The finding that the candidate did work in its deliveries, off the judge's clock (its
    excess beyond delivery_bound_ms), or "" (none, or no deliveries to pair)."""
    excess = delivery_excess_ms(reference_ms, candidate_ms, parts)
    bound = delivery_bound_ms(reference_ms, parts)
    if excess is None or excess <= bound:
        return ""
    n, batches = len(candidate_ms), len(by_batch(candidate_ms, parts))
    return (f"its {n} deliver{'y' if n == 1 else 'ies'}"
            f"{f' ({batches} batches)' if batches != n else ''} took {excess:.3f} ms beyond the reference "
            f"runner's of the same calls (upper quartile{' of the batches' if batches != n else ''}; bound "
            f"{bound:.3f} ms; the reference runner's median {statistics.median(by_batch(reference_ms, parts)):.3f} ms)")


# The reference's batches right after the candidate's may take this many times those before them
# (README, delivery): on an H200 identity answers over KernelBench's levels 1 and 2 measured 1.015
# at most, the tasks' own answers (slower, faster, fused: bench/delivery_excess.py) 0.970-1.009;
# a candidate that left a batch's work running into the reference's, 2.09-2.15 (by upper quartiles;
# by what more than half reach, the tasks' answers' results of 2026-12-02 recomputed: 0.947-1.003).
REFERENCE_AFTER_BOUND = 1.10


def by_position(batches_ms: list, second: list) -> tuple:
    """The reference's batches that ran right after the candidate's, and those that ran first."""
    return [t for t, s in zip(batches_ms, second) if s], [t for t, s in zip(batches_ms, second) if not s]


def more_than_half(values: list) -> float:
    """The value n // 2 places from the largest: what more than half of them reach (of two, the
    smaller)."""
    ordered = sorted(values)
    return ordered[len(ordered) - 1 - len(ordered) // 2]


def reference_after_ratio(batches_ms: list, second: list, quantile=more_than_half):
    """What more than half of the reference's batches that ran right after the candidate's in
    their pair reach (`second`: a flag per batch, ExecResult's reference_batches_second) over what
    more than half of those that ran first reach; None with fewer than two of either. An honest
    candidate leaves nothing running once it has answered, so the two agree; work it left running,
    unseen by its trace, slows the reference's batch that runs after it. The pairs alternate which
    side runs first, and work left past a batch of a pair the reference opened slows the
    candidate's own next batch: only its batches in the pairs it opens can be fast this way, half
    of its batches, and its interquartile mean moves only when more than a quarter of them are
    fast, so more than half of the reference's batches after them are slowed. Fewer may be slow
    at random (the honest fused GELU answer, H200: one of two at 1.145x, against the upper
    quartile that was the larger of two). Where the candidate's time came from a fast mode, a few
    of its batches (placements redrawn: timed_batches), that argument does not hold: `quantile`
    is then upper_quartile (after_quantile). The same quantile on both sides: a launch-bound
    reference's batches spread widely (tests/tasks/launch_bound, H200: their standard deviation
    about their mean)."""
    after, before = by_position(batches_ms, second)
    if len(after) < 2 or len(before) < 2:
        return None
    return quantile(after) / max(quantile(before), 1e-9)


def after_quantile(result: dict):
    """The quantile reference_after_ratio takes for an ExecResult's fields (as `kgym check --json`
    prints them or evaluate fills them): more_than_half where every batch of the candidate went
    into its time (its interquartile mean), upper_quartile where fewer did (a fast mode of as few
    as MODE_LEAST batches: a quarter slowed is then more than it needs)."""
    timed = result.get("candidate_batches_timed", 0)
    return upper_quartile if 0 < timed < len(result.get("candidate_batches_ms", [])) else more_than_half


def result_after_ratio(result: dict):
    """reference_after_ratio of an ExecResult's fields, with the quantile the judge takes for it
    (after_quantile)."""
    return reference_after_ratio(result.get("reference_batches_ms", []), result.get("reference_batches_second", []),
                                 after_quantile(result))


def reference_slowed(batches_ms: list, second: list, quantile=more_than_half) -> str:
    """The finding that the reference ran slower right after the candidate's batches than before
    them (beyond REFERENCE_AFTER_BOUND), or "" (none, or too few batches of either)."""
    ratio = reference_after_ratio(batches_ms, second, quantile)
    if ratio is None or ratio <= REFERENCE_AFTER_BOUND:
        return ""
    after, before = by_position(batches_ms, second)
    words = "upper quartiles" if quantile is upper_quartile else "what more than half reach"
    return (f"the reference's {len(after)} batches run right after the candidate's took {ratio:.3f}x the "
            f"{len(before)} run before it ({words}, {quantile(after):.3f} against {quantile(before):.3f} ms; "
            f"bound {REFERENCE_AFTER_BOUND}x)")


def clock_findings(result: dict, gpu: bool) -> list:
    """What the judge's own clock around both sides' requests found, unseen by the candidate's
    trace: [(EvidenceKind, the verdict's words, the evidence's detail)], one a rule that fired
    (both where both did). `result`: the ExecResult's fields as evaluate fills them
    (delivery_ms, reference_delivery_ms, delivery_parts, reference_batches_ms, reference_batches_second,
    candidate_batches_ms, candidate_batches_timed); `gpu`: the reference-after rule only there (on
    the CPU the two runners share a core)."""
    findings = []
    found = delivery_work(result.get("reference_delivery_ms", []), result.get("delivery_ms", []),
                          result.get("delivery_parts", []))
    if found:
        findings.append(("DELIVERY_SLOWER_THAN_REFERENCE",
                         "work done in its deliveries, off the judge's clock: " + found, found))
    found = reference_slowed(result.get("reference_batches_ms", []), result.get("reference_batches_second", []),
                             after_quantile(result)) if gpu else ""
    if found:
        findings.append(("REFERENCE_SLOWED_AFTER_CANDIDATE",
                         "work left running past its answers, unseen by its trace: " + found, found))
    return findings


def compare_chosen(sides: dict, chosen: list, check, spent: dict, first: str = "ref") -> int:
    """The last batch's `chosen` calls compared, side by side: delivered a few at a time where a
    side's buffers are fewer than the calls (on the GPU they wait in the processes that made
    them), each part checked before the next is delivered into the same buffers. Returns how
    many were compared; adds the time to `spent` (timing_delivery, timing_checks). `first`: the
    side that delivers the first part; the sides take turns after it, so that neither is always
    the one right after the batch (with the reference runner always first its deliveries took
    0.03-0.2 ms longer on an H200; taking turns, about as much: README, delivery)."""
    size = max(min(side.delivery_size() for side in sides.values()), 1)
    names = (first, "cand" if first == "ref" else "ref")
    for part_number, start in enumerate(range(0, len(chosen), size)):
        part = chosen[start:start + size]
        t0 = time.perf_counter()
        for name in names if part_number % 2 == 0 else names[::-1]:
            sides[name].deliver(part, done=start + size >= len(chosen))
        t1 = time.perf_counter()
        for j, i in enumerate(part):
            check(i, sides["ref"].delivered_output(i, j), sides["cand"].delivered_output(i, j))
        spent["timing_delivery"] += t1 - t0
        spent["timing_checks"] += time.perf_counter() - t1
    return len(chosen)


def time_interleaved(reference, candidate, new_inputs, expected: list, check, stop: StopRule, k: int,
                     device: str, seconds: dict, check_this, draw_pad=None, memory=lambda part: None) -> dict:
    """Batches of k calls a side (from `plan`), alternating which side runs first; both sides
    answer timed_batch for the same input sets, until `stop` says enough. Then takes what a
    request costs (`request_cost`: single-call requests to the reference against its batches)
    off every batch of both sides. `check(call, expected, given)` raises on a wrong timed
    output; `check_this(share)` says, per call after its batch, whether to compare it (`share`:
    check_share of the faster side's batch). With
    `draw_pad` (bytes of a pad, drawn by the judge) both sides' placements are drawn anew every
    `stop.every` batches (`move`, then one untimed batch that makes the new allocations), each
    side's time is that of its fast mode (`timed_batches`), and the candidate's batches that could
    make that mode are compared call by call (`checks_whole_batch`). Adds where the time went to
    `seconds`, and `memory(part)` samples the GPU's memory after each part (between requests,
    off both clocks)."""
    clock = Clock(device)
    sides = {"ref": reference, "cand": candidate}
    spent = {"timing_warmup": 0.0, "timing_refill": 0.0, "timing_refill_make": 0.0, "timing_calls": 0.0,
             "timing_delivery": 0.0, "timing_checks": 0.0, "timing_reference_waited": 0.0, "timing_moves": 0.0}
    raw, checked = {"ref": [], "cand": []}, 0  # seconds per batch, nothing taken off
    ref_second = []  # per raw["ref"] batch: whether it ran right after the candidate's
    moved_at = 0  # the first batch at the current placements
    every = stop.every if draw_pad is not None else 0  # batches a placement; 0: kept
    whole = set()  # the candidate's batches compared call by call (checks_whole_batch)
    parts = []  # per batch that delivered: its deliveries (ExecResult's delivery_parts)
    confirming = 0  # batches timed on to confirm a clock rule's finding

    def clock_fields() -> dict:
        # What clock_findings reads, from the batches so far: ExecResult's fields (evaluate
        # records the last of them), so the confirmation rules on what the verdict will.
        timed_cand = timed_batches(raw["ref"], raw["cand"], whole)[1] if every else raw["cand"]
        return {"delivery_ms": list(getattr(candidate, "delivery_ms", ())),
                "reference_delivery_ms": list(getattr(reference, "delivery_ms", ())), "delivery_parts": parts,
                "reference_batches_ms": [t * 1e3 for t in raw["ref"]], "reference_batches_second": ref_second,
                "candidate_batches_ms": [t * 1e3 for t in raw["cand"]], "candidate_batches_timed": len(timed_cand)}

    def refill() -> None:
        t0 = time.perf_counter()
        # Made where the reference runs them, where the task's get_inputs allows
        # (in_place_inputs): only the candidate's copy is left to write.
        targets = reference.input_targets(k) or reference.reserve_sets(k)
        sets = [new_inputs(targets[i]) if targets else new_inputs() for i in range(k)]
        if device == "cuda":
            torch.cuda.synchronize()
        spent["timing_refill_make"] += time.perf_counter() - t0
        for side in sides.values():
            side.fill_sets(sets, "timing")

    def move() -> None:
        # Before the refill: the untimed batch runs on the last batch's inputs, so nothing it
        # computes is of use to the batch that follows. A whole batch, not one call: after one
        # call the next timed batch still allocated the other k - 1 outputs' memory, and ran
        # 0.5-1% slower than the batch after it, give or take 1-2% (H200, level 2, bench/RESULTS.md).
        t0 = time.perf_counter()
        for name in order(batch, every):  # the side that runs first after it also moves first
            side = sides[name]
            side.move(draw_pad(), "timing")
            clock.ready()
            side.timed_batch(k, raw=True)
        spent["timing_moves"] += time.perf_counter() - t0
        memory("timing_moves")

    with torch.no_grad():
        t0 = time.perf_counter()
        for side in sides.values():
            # What the trials and the warm-up left cached goes back first: the judge's refill
            # below allocates a whole input set while both processes' own outputs and
            # workspaces are still held (at KernelBench's level-1 sizes the GPU ran out).
            side.release("timing")
            side.expect(expected, "timing", k)
        # No warm-up batch: both processes ran the model before (the trials, the runner's
        # warm-up), and a slow first batch falls among the quarter the IQM leaves out.
        spent["timing_warmup"] = time.perf_counter() - t0
        memory("timing_warmup")
        calls, batch = 0, 0
        while True:
            if every and redraws_before(batch, every):
                move()
                moved_at = len(raw["ref"])
            t0 = time.perf_counter()
            refill()
            memory("timing_refill")
            t1 = time.perf_counter()
            spent["timing_refill"] += t1 - t0
            reused = False
            ref_second.append(order(batch, every)[1] == "ref")
            for name in order(batch, every):
                clock.ready()
                seconds_taken, answer = sides[name].timed_batch(k, raw=True)
                raw[name].append(seconds_taken)
                reused = reused or answer.get("reused") is True
                if name == "ref":  # the trusted runner's word: how long it waited for its core
                    spent["timing_reference_waited"] += float(answer.get("waited_s", 0.0))
            if reused:
                # A side's calls returned one buffer again and again, so only its last call's
                # outputs reached the judge: this pair is dropped (one side was timed without its
                # copies, its other calls cannot be compared), and from now on both sides copy
                # their outputs inside the timing (as before 2026-11-27: both sides alike).
                for side in sides.values():
                    side.keep_outputs = False
                raw["ref"].pop()
                raw["cand"].pop()
                ref_second.pop()
            spent["timing_calls"] += time.perf_counter() - t1
            memory("timing_calls")
            calls += k
            batch += 1
            last = stop.done(raw["ref"], raw["cand"], calls)
            # The calls compared, chosen now that both sides have answered: on the GPU only their
            # outputs are delivered (off the clock; a side learns the choice once its calls ran),
            # as many at a time as the judge has buffers for (delivery_size).
            all_calls = bool(every) and not reused and checks_whole_batch(raw["cand"])
            share = check_share(min(raw["ref"][-1], raw["cand"][-1]), k) if raw["ref"] and raw["cand"] else 1.0
            if all_calls:
                whole.add(len(raw["cand"]) - 1)
            chosen = [i for i in range(k) if all_calls or
                      (not (reused and i < k - 1) and ((last and i == k - 1) or check_this(share)))]
            delivered = len(getattr(candidate, "delivery_ms", ()))
            checked += compare_chosen(sides, chosen, lambda i, ref, cand: check(calls - k + i, ref, cand), spent,
                                      first=order(batch, every)[0])
            if len(getattr(candidate, "delivery_ms", ())) > delivered:  # this batch's deliveries (GPU)
                parts.append(len(candidate.delivery_ms) - delivered)
            memory("timing_checks")
            if reused:  # copied inside the timing from now on: a buffer a call
                for side in sides.values():
                    side.expect(expected, "timing", k)
            if last and stop.confirming(raw["ref"], raw["cand"]) and clock_findings(clock_fields(), device == "cuda"):
                last = False  # a finding on a few batches: timed on until it holds on enough, or goes
                confirming += 1
            if last:
                break
        t0 = time.perf_counter()
        one = single_calls(reference, clock)  # on the last batch's first set, at the last placement
        current = raw["ref"][moved_at:] or raw["ref"]
        cost = request_cost(one, current, k) if k > 1 else \
            request_cost(one, single_calls(reference, clock, passes=2), 2)
        cost = bounded_cost(cost, raw["ref"] + raw["cand"])
        spent["timing_warmup"] += time.perf_counter() - t0
    reference.overhead_s = candidate.overhead_s = cost  # the same path: taken off both
    seconds.update(spent)
    timed = dict(raw)
    if not every:
        rse = ratio_rse(raw["ref"], raw["cand"])
    else:
        ref_kept, cand_kept = timed_batches(raw["ref"], raw["cand"], whole)
        kept = set(ref_kept) & set(cand_kept)  # the pairs the error is taken over
        timed = {"ref": [raw["ref"][i] for i in ref_kept], "cand": [raw["cand"][i] for i in cand_kept]}
        rse = within_placement_rse(raw["ref"], raw["cand"], every) if stop.within_placements(raw["ref"], raw["cand"]) \
            else placement_rse(raw["ref"], raw["cand"], kept, every)
    per_call = {name: [max(t - cost, 0.0) * 1e3 / k for t in times for _ in range(k)] for name, times in timed.items()}
    return {"reference_ms": per_call["ref"], "candidate_ms": per_call["cand"], "checked": checked, "overhead_s": cost,
            "rse": rse,
            "batches_ms": {name: [t * 1e3 for t in times] for name, times in raw.items()},
            "batches_timed": {name: len(times) for name, times in timed.items()}, "whole_batches": len(whole),
            "reference_second": ref_second, "delivery_parts": parts, "confirming_batches": confirming,
            "clock": clock_fields()}


def draw_pad(rng) -> int:
    """A pad's size for a move: uniform up to device_memory.MAX_PAD_BYTES, in 2 MiB steps (the
    allocator's large-block granularity), from the judge's random source."""
    return rng.randrange(0, device_memory.MAX_PAD_BYTES + 1, 2 << 20)


def time_traced(candidate, new_inputs, reps: int, expect=None, check=None) -> list:
    """A few more timed calls of the candidate alone, one per request, each traced as phase
    TRACE_TIMED (rep i) in its process, so the executor can check that its kernels ran inside the
    time the judge saw (no work on a side stream or left running past its answer). They are the
    trace's calls alone on a quiet GPU (the executor's measure of one call's GPU time: the
    eval-mode trials may run beside the judge's reference), so each one's output is checked too:
    `expect(inputs)` gives the reference's outputs, made before the call (one that changes its
    inputs in place leaves them as they were), and `check(call, expected, given)` rules on them
    (as for a timed batch's calls; `call` names the rep)."""
    clock = Clock("cuda")
    times = []
    with torch.no_grad():
        for rep in range(reps):
            inputs = new_inputs()
            expected = expect(inputs) if expect else None
            candidate.fill_sets([inputs], "timing")
            inputs = None
            clock.ready()
            # Nothing taken off: the request's whole time bounds its kernels' span (with the
            # request cost taken off, an over-estimated cost made an honest span look too long).
            times.append(candidate.timed_batch(1, rep=rep, raw=True)[0] * 1e3)
            if expected is not None:
                check(f"{rep} of the traced calls", expected, candidate.slot_output(0))
                expected = None
    return times
