"""The judge's evaluation of one candidate: load, check correctness in train and eval mode,
time, rule the verdict.

It runs in the judge's process, where no byte of the candidate's code is ever executed: the
reference, the inputs (from seeds drawn here, unpredictable), the comparison, the options
and the clocks live here, and the candidate is a process at the other end of a channel
(remote_candidate.py). For timing, the reference is served the same way by a trusted process
of its own (the reference runner), so both sides are measured through one path. Short and linear on purpose (in the manner of KernelBench's harness).
Everything that can kill or hang a process is the executor's business, not this file's.
"""
import math
import os
import random
import time

import torch

from . import (compare, cost_model, device_memory, eval_defaults, failures, frames, in_place_inputs, local_candidate,
               numerics, packing, precision, program, remote_candidate, timing, tracking)
from .laps import Laps
from .failures import Failure, failure_from  # noqa: F401  (callers catch evaluate.Failure)


def reference_runner_source(task: dict) -> str:
    """The task's program with its Model answering as ModelNew: what the reference runner serves."""
    return task.get("source", "") + "\n\nModelNew = Model\n"


def draw_seed(rng: random.Random) -> int:
    return rng.getrandbits(62) + 1


def make_inputs(task, seed: int, device: str, dtype: torch.dtype = torch.float32, into: list = ()) -> list:
    """get_inputs() under `seed`; its random tensors made in `into` where they fit (a set's
    buffers, in packing's order: in_place_inputs)."""
    torch.manual_seed(seed)
    with torch.device(device), in_place_inputs.RandomInto(into if dtype == torch.float32 else ()):
        return precision.cast(list(task.get_inputs()), dtype)


def build_reference(task, init_inputs: list, seed: int, device: str, dtype: torch.dtype = torch.float32):
    torch.manual_seed(seed)
    with torch.device(device):
        return precision.move(task.Model(*init_inputs), dtype)


def interpreter_profile(reference, candidate, inputs: list, atol: float, rtol: float, rng: random.Random) -> tuple:
    """The CPU mode's ProfileReport: coverage from the work PyTorch ops still do in the
    candidate's forward against the reference's, and a modeled GPU speedup (cost_model's
    roofline), each taken in the worse of the two modes; the reference follows the candidate's
    modes with the same seeds, as in the trials. Also returns what was wrong with the
    candidate's output in the profiled passes, if anything: a candidate that notices it is
    being measured and skips its work there is cheating the profile."""
    coverage, speedup, wrong = [], [], None
    for mode in ("train", "eval"):
        seed = draw_seed(rng)
        reference.train(mode == "train")
        torch.manual_seed(seed)
        expected = []
        ref_work, ref_s = cost_model.pytorch_work(reference, [x.clone() if isinstance(x, torch.Tensor) else x
                                                              for x in inputs], outputs=expected)
        expected = compare.flatten(expected[0])
        candidate.fill(inputs, "correctness")
        work, seconds, given, layout = candidate.profile(mode, seed, expected)
        coverage.append(cost_model.coverage(ref_work, work))
        speedup.append(ref_s / max(seconds, 1e-12))
        verdict = compare.compare(expected, given, atol, rtol) if given is not None else {"correct": False,
                                                                                          "message": layout}
        if not verdict["correct"] and wrong is None:
            wrong = f"{mode} mode, profiled pass: {verdict['message']}"
    return {"evidence_source": "cpu_cost_model", "coverage": min(coverage), "modeled_speedup": min(speedup)}, wrong


def evaluate(request: dict, workdir: str, candidate, phase, result: dict, quiet_gpu=lambda: None,
             rng: random.Random = None, timed_reference=None, gpu_done=lambda: None,
             timing_planned=lambda small: None) -> dict:
    """Fills `result` as it goes (a Failure leaves what was learnt before it in place).
    `candidate` is the remote candidate (or the plain harness's in-process stand-in);
    `timed_reference` the reference runner (None: the judge's reference model, in process);
    `quiet_gpu` returns once no other sandbox process is initialising the GPU and keeps any
    from starting until `gpu_done`; `timing_planned(small)` says the timing is about to start,
    and whether this evaluation is small enough for the next ones to warm up beside it."""
    device = "cuda" if request.get("device") == "CUDA" else "cpu"
    # The executor sends every option filled in; other callers get messages/eval_defaults.json's.
    opts = {**eval_defaults.options(device), **{k: v for k, v in request.get("options", {}).items() if v}}
    task = request["task"]
    overrides = task.get("cpu_sizes", {}) if device == "cpu" and opts.get("apply_cpu_sizes") else {}
    trials = int(opts["correctness_trials"])
    dtype = precision.dtype_of(opts.get("precision"))
    for name in ("atol", "rtol"):
        opts.setdefault(name, eval_defaults.tolerance(opts.get("precision"), opts.get("tolerances")))
    rng = rng or random.SystemRandom()  # every seed below is drawn here: the candidate cannot predict one
    numerics.pin()
    result["numerics"] = numerics.as_text(numerics.current())
    result.update(compiled=False, correct=False, trials=[], evidence=[])

    def hack(failure: Failure) -> None:
        """A hacking finding ends the evaluation, unless the check is off (an ablation)."""
        if not opts.get("no_hacking_check"):
            raise failure
        result["evidence"] += [e for e in failure.evidence if e not in result["evidence"]]

    def integrity(patched: list, where: str) -> None:
        if patched:
            hack(Failure("HACKED", where, f"candidate replaced {', '.join(patched)}",
                         [{"kind": "PATCHED_HARNESS", "detail": ", ".join(patched), "source": "sandbox"}]))

    seconds = result.setdefault("harness_seconds", {})
    clock = {"phase": None, "since": time.perf_counter()}

    def enter(name):
        now = time.perf_counter()
        if clock["phase"]:
            seconds[clock["phase"]] = seconds.get(clock["phase"], 0.0) + now - clock["since"]
        clock.update(phase=name, since=now)
        if name:
            phase(name)

    enter("load")
    memory = device_memory.Peak(device, result)  # sampled at every lap: the memory by part
    lap = Laps(seconds, memory.sample)
    try:
        ref_mod = program.load_program(os.path.join(workdir, "kgym_reference.py"), "kgym_reference",
                                       task["source"], overrides)
        init_seed = draw_seed(rng)
        torch.manual_seed(init_seed)
        with torch.device(device):
            init_inputs = precision.cast(list(ref_mod.get_init_inputs()), dtype)
        reference = build_reference(ref_mod, init_inputs, init_seed, device, dtype)
    except BaseException as exc:
        raise Failure("INTERNAL_ERROR", "load", f"the task does not load: {exc!r}",
                      own_memory=device == "cuda" and failures.out_of_device_memory(str(exc)))
    lap("load_reference")
    candidate.hello()
    reference_building = None
    if timed_reference is None:
        timed_reference = local_candidate.LocalCandidate.serving(reference, device)
    else:
        timed_reference.hello()
        reference_building = timed_reference.start_build(init_inputs, init_seed, overrides, dtype)
    lap("load_hello")
    building = candidate.start_build(init_inputs, init_seed, None, dtype)  # the two processes build at once
    if reference_building:
        timed_reference.built(reference_building)
    lap("load_build")

    def new_inputs(into: list = ()) -> list:
        return make_inputs(ref_mod, draw_seed(rng), device, dtype, into)

    integrity(candidate.built(building), "load")
    lap("load_candidate")
    result["compiled"] = True

    enter("correctness")
    # The first calls of the judge's reference and of the candidate (kernels loaded, library
    # heuristics, Triton's compiles) run at once, both in eval mode (BatchNorm and Dropout
    # stay as built), on one fresh set: each process pays its first call, not one after the
    # other. Not for large sets (timing.overlaps: the GPU's memory).
    first = new_inputs()
    warming = candidate.start_warm(first) if device == "cuda" and timing.overlaps(timing.tensor_bytes(first)) \
        else None  # the CPU's interpreter has nothing to load or compile
    reference.eval()
    planned = timing.start_plan(reference, timed_reference, first, int(opts["warmup_reps"]))
    first = None
    device_memory.release(device)
    lap("correctness_plan")
    if warming:
        candidate.finish_warm(warming)
    lap("correctness_warm")
    pattern = planned["expected"] if timing.overlaps(planned["set_bytes"]) else None
    previous, tracker = {}, tracking.Tracker()
    with torch.no_grad():
        for trial in range(trials):
            trial_seed = draw_seed(rng)
            for mode in ("train", "eval"):
                # The reference follows the candidate's mode sequence from the same state, so
                # BatchNorm's running statistics evolve alike; both calls get one RNG seed. The
                # candidate's call runs while the judge computes the reference's (`pattern`: the
                # outputs' shapes, for its buffers; one for every input set).
                inputs = make_inputs(ref_mod, trial_seed, device, dtype)
                candidate.fill(inputs, "correctness")
                lap("correctness_inputs")
                call_seed = draw_seed(rng)
                calling = candidate.start_call(mode, call_seed, "correctness", pattern) if pattern else None
                reference.train(mode == "train")
                torch.manual_seed(call_seed)
                expected = compare.flatten(reference(*inputs))
                if packing.flat_specs(expected) != packing.flat_specs(planned["expected"]):
                    raise Failure("INTERNAL_ERROR", "correctness", "the task's outputs change shape from one "
                                  "input set to the next; kgym compares and times them in buffers of one shape")
                out, layout, aliases, patched = candidate.finish_call(calling) if calling else \
                    candidate.call(mode, call_seed, "correctness", expected)
                lap("correctness_calls")
                integrity(patched, "correctness")
                if aliases:
                    hack(Failure("HACKED", "correctness", f"output aliases an input ({mode} mode)",
                                 [{"kind": "OUTPUT_ALIASES_INPUT", "detail": f"trial {trial}, {mode} mode",
                                   "source": "sandbox"}]))
                verdict = compare.compare(expected, out, opts["atol"], opts["rtol"]) if out is not None \
                    else {"correct": False, "max_abs_error": 0.0, "max_rel_error": 0.0, "message": layout}
                measured = verdict.pop("measured", None)
                if measured:
                    # An output seen before, for inputs whose reference answer differed: served
                    # from a cache (keyed on anything: call count, buffer address, mode).
                    seen, expected_print = compare.fingerprints(expected, measured)
                    for (earlier_trial, earlier_mode), (earlier_out, earlier_expected) in previous.items():
                        if seen == earlier_out and expected_print != earlier_expected:
                            raise Failure("HACKED", "correctness", f"output unchanged for new inputs ({mode} mode)",
                                          [{"kind": "CACHED_OUTPUT", "detail": f"trial {trial} ({mode} mode) repeats "
                                            f"the output of trial {earlier_trial} ({earlier_mode} mode)",
                                            "source": "sandbox"}])
                    previous[(trial, mode)] = (seen, expected_print)
                result["trials"].append({"trial": trial, "mode": frames.mode_value(mode), "seed": trial_seed, **verdict})
                if not verdict["correct"]:
                    raise Failure("INCORRECT", "correctness", f"trial {trial} ({mode} mode): {verdict['message']}")
                tracker.add_measured(expected, measured)
                lap("correctness_checks")
                inputs = expected = out = measured = None  # a call's tensors go before the next call's are made
        followed = tracker.verdict()  # all calls together: an output that ignores its input
        if not followed["correct"]:
            raise Failure("INCORRECT", "correctness", followed["message"])
        launched = candidate.launches()
        result["launches"] = [{**r, "mode": frames.mode_value(r["mode"])} for r in launched]
        if device == "cpu":
            result["profile"], wrong = interpreter_profile(reference, candidate,
                                                           make_inputs(ref_mod, draw_seed(rng), device, dtype),
                                                           opts["atol"], opts["rtol"], rng)
            if wrong:
                hack(Failure("HACKED", "correctness", "wrong output when profiled: " + wrong,
                             [{"kind": "PROFILED_PASS_DIFFERS", "detail": wrong, "source": "cpu_cost_model"}]))
    silent = [r["mode"] for r in launched if r["generated_launches"] == 0]
    if silent:
        hack(Failure("HACKED", "correctness",
                      f"no kernel of the candidate's own ran in {' and '.join(silent)} mode",
                      [{"kind": "NO_GENERATED_KERNEL", "detail": f"{r['mode']} mode: 0 launches of candidate kernels",
                        "source": r["source"]} for r in launched if r["mode"] in silent]))

    enter("timing")
    lap.skip()
    device_memory.release(device)  # the trials' inputs and outputs: timing's arenas come next
    if device == "cuda":  # and its process's cached outputs, before the reference runner's warm-up
        candidate.release("timing")
    lap("timing_release")
    quiet_gpu()
    lap("timing_quiet")
    reference.eval()
    timed = timing.plan(timed_reference, planned, device, int(opts["timing_reps"]), new_inputs,
                        int(opts["batch_memory_mb"]) << 20)
    result["timed_batch_calls"] = timed["batch"]
    # What one delivery may copy: the calls the candidate's buffers hold, each call's outputs.
    output_bytes = timing.tensor_bytes(timed["expected"])
    per_delivery = remote_candidate.delivery_slots(timed["batch"], output_bytes)
    result["delivery_copies"] = per_delivery * len(timed["expected"])
    result["delivery_bytes"] = per_delivery * output_bytes
    timed_reference.load_state(reference)  # BatchNorm's running statistics as the trials left them
    # GPU only: on the CPU the next evaluations' start would share the cores being timed.
    timing_planned(device == "cuda" and not device_memory.large(result))
    lap("timing_plan")

    def check_timed(call, expected: list, given: list) -> None:
        """A timed call's output against the reference's on the same inputs (`call`: its number
        in the batch, or which traced call)."""
        if compare.all_close(expected, given, opts["atol"], opts["rtol"]):
            return
        verdict = compare.compare(expected, given, opts["atol"], opts["rtol"])
        if not verdict["correct"]:
            raise Failure("HACKED", "timing", f"wrong output while being timed (call {call}): {verdict['message']}",
                          [{"kind": "WRONG_OUTPUT_WHEN_TIMED", "detail": f"call {call}: {verdict['message']}",
                            "source": "judge"}])

    # Placements moved during the timing (GPU only): REDRAWN averages over them, CHECKED only
    # looks for a side with two modes (timing.StopRule).
    placement = opts.get("placement")
    redraw = device == "cuda" and placement in ("PLACEMENT_REDRAWN", "PLACEMENT_CHECKED")
    try:
        timed = timing.time_interleaved(timed_reference, candidate, new_inputs, timed["expected"], check_timed,
                                        timing.StopRule(int(opts["timing_reps"]), float(opts["min_timed_s"]),
                                                        float(opts["max_timed_s"]), float(opts.get("timing_precision", 0.0)),
                                                        timing.placement_batches(timed["batch"], timed["call_s"]) if redraw else 0,
                                                        placement == "PLACEMENT_CHECKED"),
                                        timed["batch"], device, seconds,
                                        lambda share: rng.random() < share,
                                        (lambda: timing.draw_pad(rng)) if redraw else None, memory.sample)
        lap.skip()  # time_interleaved counted its parts
        reference_changed = timed_reference.finish()  # its process exits while the traced calls run
        timed_reference.let_go()  # its inputs and output buffers with it
        if device == "cuda" and candidate.traced and int(opts["traced_reps"]) > 0:
            result["traced_rep_ms"] = timing.time_traced(
                candidate, new_inputs, int(opts["traced_reps"]),
                lambda inputs: compare.flatten(reference(*inputs)), check_timed)
        gpu_done()  # the next evaluations' warm-ups may start now
        lap("timing_traced")
    except Failure:
        raise
    except BaseException as exc:  # the judge's own (the candidate's come as Failures), but in process
        if device == "cuda" and failures.out_of_device_memory(str(exc)):
            raise Failure("INTERNAL_ERROR", "timing", "kgym ran out of GPU memory while timing: " +
                          failures.last_line(exc), own_memory=True)
        raise failure_from(exc, "timing", "while timing")
    finally:  # also for a failed timing: the executor matches them to the trace's windows
        result["timed_batch_ms"] = list(getattr(candidate, "batch_ms", []))
        result["delivery_ms"] = list(getattr(candidate, "delivery_ms", []))
        result["reference_delivery_ms"] = list(getattr(timed_reference, "delivery_ms", []))
        memory.sample()
    changed = candidate.finish()
    lap("timing_finish")
    if changed:  # its word, and its own kernels may use TF32 anyway: recorded, not ruled on
        result["evidence"].append({"kind": "NUMERICS_CHANGED", "detail": "; ".join(changed)[:500],
                                   "source": "candidate_process"})
    if reference_changed:
        raise Failure("INTERNAL_ERROR", "timing", "the reference runner's numerics flags moved: " +
                      "; ".join(reference_changed))
    ref_ms, cand_ms = timed["reference_ms"], timed["candidate_ms"]
    result["timed_calls_checked"] = timed["checked"]
    result.update(timed["clock"])  # what the clock rules read, as the timing's confirmation read it
    result["confirming_batches"] = timed["confirming_batches"]
    result["reference_batches_timed"] = timed["batches_timed"]["ref"]
    result["candidate_call_overhead_us"] = timed["overhead_s"] * 1e6
    # Both sides only copy in a delivery, and an honest candidate leaves nothing running once it
    # answers: the judge's clock sees work done there or left running, whatever its trace says.
    findings = timing.clock_findings(result, device == "cuda")
    if findings:
        hack(Failure("HACKED", "timing", "; ".join(message for _, message, _ in findings),
                     [{"kind": kind, "detail": detail, "source": "judge"} for kind, _, detail in findings]))
    result["reference_time"], result["candidate_time"] = timing.stats(ref_ms), timing.stats(cand_ms)
    result["timed_s"] = (sum(ref_ms) + sum(cand_ms)) / 1e3
    if math.isfinite(timed["rse"]):  # fewer than 3 batch pairs after the first: unknown
        result["speedup_rse"] = timed["rse"]
    result["speedup"] = result["reference_time"]["iqm_ms"] / max(result["candidate_time"]["iqm_ms"], 1e-9)
    enter(None)
    result["correct"] = True
    result["verdict"] = "OK"
    # The speedup's relative standard error beside it, where known: a noisy timing that reached its
    # cap says so (a trainer may weigh such a reward less).
    error = f" +-{100 * result['speedup_rse']:.1f}%" if result.get("speedup_rse", 0) > 0 else ""
    result["message"] = f"correct, speedup {result['speedup']:.3f}x{error}"
    return result
