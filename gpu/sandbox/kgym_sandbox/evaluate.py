"""The evaluation of one candidate: load, check correctness in train and eval mode, time.

Short and linear on purpose (in the manner of KernelBench's harness). Everything that can
kill or hang the process is the executor's business, not this file's.
"""
import importlib.util
import os
import sys
import time
import traceback

import torch

from . import compare, cost_model, launches, protocol, timing, tracing

# A mirror of gpu/executor/eval_defaults.cpp, for callers that are not the executor (the
# executor always sends every option filled in).
DEFAULTS = {"correctness_trials": 5, "atol": 1e-2, "rtol": 1e-2, "warmup_reps": 3, "seed": 42, "traced_reps": 5}
DEVICE_DEFAULTS = {"cuda": {"timing_reps": 1000, "min_timed_s": 1.0},
                   "cpu": {"timing_reps": 5, "min_timed_s": 0.5}}
# Functions a candidate could patch to fake correctness or timing; checked after it ran.
GUARDED = {"torch.isclose": (torch, "isclose"), "torch.equal": (torch, "equal"),
           "torch.allclose": (torch, "allclose"),
           "torch.cuda.synchronize": (torch.cuda, "synchronize"),
           "torch.cuda.Event": (torch.cuda, "Event"),
           "torch.Tensor.__eq__": (torch.Tensor, "__eq__"),
           "time.perf_counter": (time, "perf_counter")}
ORIGINALS = {name: getattr(owner, attr) for name, (owner, attr) in GUARDED.items()}


class Failure(Exception):
    """Ends the evaluation with a verdict."""

    def __init__(self, verdict: str, phase: str, message: str, evidence=None):
        super().__init__(message)
        self.verdict, self.phase, self.message = verdict, phase, message
        self.evidence = evidence or []


def classify(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, (MemoryError, torch.OutOfMemoryError)) or "can't allocate memory" in text:
        return "RESOURCE_LIMIT"
    if "CUDA error" in text or "cudaError" in text or "CUDA driver error" in text \
            or "illegal memory access" in text:
        return "CUDA_ERROR"
    return "RUNTIME_ERROR"


def failure_from(exc: BaseException, phase: str, what: str) -> Failure:
    last = traceback.format_exception_only(type(exc), exc)[-1].strip()
    return Failure(classify(exc), phase, f"{what}: {last}")


def load_program(path: str, name: str, source: str, overrides: dict):
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # Triton's JIT looks functions' globals up through here
    spec.loader.exec_module(module)
    for key, value in overrides.items():
        setattr(module, key, int(value))
    return module


def make_inputs(task, seed: int, device: str) -> list:
    torch.manual_seed(seed)
    with torch.device(device):
        return list(task.get_inputs())


def fresh_copies(inputs: list) -> list:
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]


def interpreter_profile(reference, candidate, inputs: list, recorder, atol: float, rtol: float) -> tuple:
    """The CPU mode's ProfileReport: launches from the interpreter's record; coverage from
    the work PyTorch ops still do in the candidate's forward, and a modeled GPU speedup
    (cost_model's roofline), taken in the slower of the two modes. Also returns what was
    wrong with the candidate's output in the profiled passes, if anything: a candidate that
    notices it is being measured and skips its work there is cheating the profile."""
    expected = []
    ref_work, ref_s = cost_model.pytorch_work(reference, fresh_copies(inputs), outputs=expected)
    left, seconds, wrong = {}, {}, None
    for mode in ("train", "eval"):
        candidate.train(mode == "train")
        given = []
        left[mode], seconds[mode] = cost_model.pytorch_work(candidate, fresh_copies(inputs), recorder, given)
        verdict = compare.compare(expected[0], given[0], atol, rtol)
        if not verdict["correct"] and wrong is None:
            wrong = f"{mode} mode, profiled pass: {verdict['message']}"
    profile = {"evidence_source": "cpu_cost_model",
               "coverage": min(cost_model.coverage(ref_work, work) for work in left.values()),
               "modeled_speedup": ref_s / max(max(seconds.values()), 1e-12),
               "generated_launches_train": recorder.counts["train"],
               "generated_launches_eval": recorder.counts["eval"]}
    return profile, wrong


def harness_bindings() -> dict:
    """Every function and class of the harness's own modules, and every attribute of those
    classes, by name: a candidate could swap one to judge itself (e.g. compare.compare, to
    pass a wrong answer). Taken at import, in the zygote, before any candidate exists."""
    bindings = {}
    for module in (compare, cost_model, launches, protocol, timing, tracing, sys.modules[__name__]):
        for name, value in vars(module).items():
            if name.startswith("__") or not callable(value):
                continue
            bindings[(module, name)] = value  # its own, and what it imported (compare._isclose)
            if isinstance(value, type) and value.__module__ == module.__name__:
                bindings.update(((value, attr), member) for attr, member in vars(value).items()
                                if not attr.startswith("__") or attr in ("__init__", "__call__"))
    return bindings


def check_tampering():
    patched = [name for name, (owner, attr) in GUARDED.items()
               if getattr(owner, attr) is not ORIGINALS[name]]
    patched += [f"{getattr(owner, '__name__', owner)}.{attr}" for (owner, attr), value in HARNESS.items()
                if vars(owner).get(attr) is not value]
    if patched:
        raise Failure("HACKED", "integrity", f"candidate replaced {', '.join(patched)}",
                      [{"kind": "patched_harness", "detail": ", ".join(patched), "source": "sandbox"}])


class NoTracer:
    def phase(self, name):
        pass

    def finish(self):
        pass


def evaluate(request: dict, workdir: str, recorder, phase, result: dict, quiet_gpu=lambda: None,
             tracer=NoTracer()) -> dict:
    """Fills `result` as it goes (a Failure leaves what was learnt before it in place).
    `quiet_gpu` returns once no other sandbox process is initialising the GPU."""
    device = "cuda" if request.get("device") == "CUDA" else "cpu"
    opts = {**DEFAULTS, **DEVICE_DEFAULTS[device], **{k: v for k, v in request.get("options", {}).items() if v}}
    task, cand = request["task"], request["candidate"]
    overrides = task.get("cpu_sizes", {}) if device == "cpu" and opts.get("apply_cpu_sizes") else {}
    seed, trials = int(opts["seed"]), int(opts["correctness_trials"])
    result.update(compiled=False, correct=False, trials=[], evidence=[])

    def hack(failure: Failure) -> None:
        """A hacking finding ends the evaluation, unless the check is off (an ablation)."""
        if not opts.get("no_hacking_check"):
            raise failure
        result["evidence"] += [e for e in failure.evidence if e not in result["evidence"]]

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
    try:
        ref_mod = load_program(os.path.join(workdir, "kgym_reference.py"), "kgym_reference",
                               task["source"], overrides)
    except BaseException as exc:
        raise Failure("INTERNAL_ERROR", "load", f"the task does not load: {exc!r}")
    recorder.candidate_file = os.path.join(workdir, "kgym_candidate.py")
    try:
        cand_mod = load_program(recorder.candidate_file, "kgym_candidate", cand["source"], {})
    except BaseException as exc:
        raise Failure("COMPILE_ERROR", "load", "candidate does not load: "
                      + traceback.format_exception_only(type(exc), exc)[-1].strip())
    check_tampering()
    if not isinstance(getattr(cand_mod, "ModelNew", None), type):
        raise Failure("COMPILE_ERROR", "load", "candidate defines no class ModelNew")
    torch.manual_seed(seed)
    with torch.device(device):
        init_inputs = list(ref_mod.get_init_inputs())
        torch.manual_seed(seed)
        reference = ref_mod.Model(*init_inputs)
        torch.manual_seed(seed)
        try:
            candidate = cand_mod.ModelNew(*init_inputs)
        except BaseException as exc:
            raise Failure("COMPILE_ERROR", "load", "ModelNew(*get_init_inputs()) failed: "
                          + traceback.format_exception_only(type(exc), exc)[-1].strip())
    result["compiled"] = True

    enter("correctness")
    previous = {}
    with torch.no_grad():
        for trial in range(trials):
            inputs = make_inputs(ref_mod, seed + 1 + trial, device)
            tracer.phase("reference")
            expected = reference(*fresh_copies(inputs))
            expected_print = compare.fingerprint(expected)
            for mode in ("train", "eval"):
                candidate.train(mode == "train")
                given = fresh_copies(inputs)
                recorder.mode = mode
                tracer.phase(mode)
                try:
                    out = candidate(*given)
                except BaseException as exc:
                    raise failure_from(exc, "correctness", f"forward ({mode} mode, trial {trial})")
                finally:
                    recorder.mode = None
                    tracer.phase("checks")
                if compare.aliases(out, given):
                    hack(Failure("HACKED", "correctness", f"output aliases an input ({mode} mode)",
                                 [{"kind": "output_aliases_input", "detail": f"trial {trial}, {mode} mode",
                                   "source": "sandbox"}]))
                # An output seen before, for inputs whose reference answer differed: served
                # from a cache (keyed on anything: call count, buffer address, mode).
                seen = compare.fingerprint(out)
                for (earlier_trial, earlier_mode), (earlier_out, earlier_expected) in previous.items():
                    if seen == earlier_out and expected_print != earlier_expected:
                        raise Failure("HACKED", "correctness", f"output unchanged for new inputs ({mode} mode)",
                                      [{"kind": "cached_output", "detail": f"trial {trial} ({mode} mode) repeats "
                                        f"the output of trial {earlier_trial} ({earlier_mode} mode)",
                                        "source": "sandbox"}])
                previous[(trial, mode)] = (seen, expected_print)
                verdict = compare.compare(expected, out, opts["atol"], opts["rtol"])
                result["trials"].append({"trial": trial, "mode": mode, "seed": seed + 1 + trial, **verdict})
                if not verdict["correct"]:
                    raise Failure("INCORRECT", "correctness",
                                  f"trial {trial} ({mode} mode): {verdict['message']}")
    check_tampering()
    result["launches"] = recorder.records()
    if device == "cpu":
        result["profile"], wrong = interpreter_profile(reference, candidate, make_inputs(ref_mod, seed, device),
                                                       recorder, opts["atol"], opts["rtol"])
        if wrong:
            hack(Failure("HACKED", "correctness", "wrong output when profiled: " + wrong,
                         [{"kind": "profiled_pass_differs", "detail": wrong, "source": "cpu_cost_model"}]))
    silent = [r["mode"] for r in result["launches"] if r["generated_launches"] == 0]
    if silent:
        hack(Failure("HACKED", "correctness",
                      f"no kernel of the candidate's own ran in {' and '.join(silent)} mode",
                      [{"kind": "no_generated_kernel", "detail": f"{m} mode: 0 launches of candidate kernels",
                        "source": recorder.source} for m in silent]))

    enter("timing")
    tracer.phase("untraced")  # timed repetitions run without tracing
    quiet_gpu()
    candidate.eval()
    inputs = make_inputs(ref_mod, seed + 1000, device)

    def refill(rep):
        fresh = make_inputs(ref_mod, seed + 2000 + rep, device)
        for dst, src in zip(inputs, fresh):
            if isinstance(dst, torch.Tensor):
                dst.copy_(src)

    try:
        ref_ms, cand_ms, ref_out, cand_out = timing.time_interleaved(
            reference, candidate, inputs, refill, int(opts["timing_reps"]), int(opts["warmup_reps"]),
            float(opts["min_timed_s"]), device, seconds)
        if device == "cuda" and getattr(tracer, "library", None):
            result["traced_rep_ms"] = timing.time_traced(candidate, inputs, refill, int(opts["traced_reps"]), tracer)
    except BaseException as exc:
        raise failure_from(exc, "timing", "forward while timing")
    check_tampering()
    last = compare.compare(ref_out, cand_out, opts["atol"], opts["rtol"])
    if not last["correct"]:
        raise Failure("HACKED", "timing", "wrong output while being timed: " + last["message"],
                      [{"kind": "stale_output_when_timed", "detail": last["message"], "source": "sandbox"}])
    result["reference_time"], result["candidate_time"] = timing.stats(ref_ms), timing.stats(cand_ms)
    result["timed_s"] = (sum(ref_ms) + sum(cand_ms)) / 1e3
    result["speedup"] = result["reference_time"]["iqm_ms"] / max(result["candidate_time"]["iqm_ms"], 1e-9)
    enter(None)
    result["correct"] = True
    result["verdict"] = "OK"
    result["message"] = f"correct, speedup {result['speedup']:.3f}x"
    return result


HARNESS = harness_bindings()  # last: every function above is in it
