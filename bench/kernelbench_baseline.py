"""KernelBench's own harness on the identity answers: the baseline of kernelbench_sweep.py.

Runs KernelBench's `eval_kernel_against_ref` in this one Python process, problem after
problem, the way its evaluation scripts call it for one GPU: 5 correctness trials, 100 timed
calls with CUDA events for the answer and 100 for the reference (check_for_excessive_speedup,
KernelBench's own reference timing), backend "cuda", seed 42. The answer is each problem's
Model renamed ModelNew (bench/kernelbench_tasks.py). Prints one JSON line per problem:
{"problem", "correct", "runtime_us", "ref_runtime_us", "wall_s", "peak_device_memory_mb",
"device_memory_mb", "error"} and a last line {"stubbed": [...]} naming the packages stood in
for. `peak_device_memory_mb` is what its tensors held at most (PyTorch's max_memory_allocated);
`device_memory_mb` is the device's memory in use at that time as kgym counts its own
(ExecResult.peak_device_memory_mb: everything in use on the device, here this process's context
and its allocator's most reserved, with nothing else on the GPU: kernelbench_sweep.py runs this
after kgym serve has stopped), so the two harnesses' figures compare.

KernelBench's package imports packages kgym never needs (python-dotenv, tqdm, openai,
litellm, requests, pydantic). Where one is not installed, a stub stands in for it: none of
them is called on this path, except pydantic's BaseModel, which KernelExecResult derives from
and whose stub keeps the class's field defaults.

    python3 bench/kernelbench_baseline.py --kernelbench ../shared/kernelbench PROBLEM.py...
"""
import argparse
import copy
import importlib
import json
import os
import sys
import time
import types

import kernelbench_tasks

OPTIONAL_PACKAGES = ("dotenv", "tqdm", "openai", "litellm", "requests", "pydantic")


class _BaseModel:
    """pydantic.BaseModel as KernelExecResult uses it: keyword fields over class defaults."""

    def __init__(self, **fields):
        for cls in reversed(type(self).__mro__):
            for name in getattr(cls, "__annotations__", {}):
                if hasattr(cls, name):
                    setattr(self, name, copy.copy(getattr(cls, name)))
        for name, value in fields.items():
            setattr(self, name, value)


def stub_missing_packages() -> list:
    """Installs a stub module for each optional package that does not import; returns their names."""
    stubbed = []
    for name in OPTIONAL_PACKAGES:
        try:
            importlib.import_module(name)
        except ImportError:
            module = types.ModuleType(name)
            module.load_dotenv = lambda *a, **k: False
            module.tqdm = lambda iterable=None, *a, **k: iterable
            module.OpenAI = object
            module.completion = None
            module.BaseModel = _BaseModel
            sys.modules[name] = module
            stubbed.append(name)
    return stubbed


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernelbench", required=True, help="a KernelBench checkout (its src/kernelbench is used)")
    parser.add_argument("--precision", choices=["fp32", "fp16", "bf16"], default="fp32")
    parser.add_argument("--correct-trials", type=int, default=5)
    parser.add_argument("--perf-trials", type=int, default=100)
    parser.add_argument("problems", nargs="+", help="problem files of the checkout")
    args = parser.parse_args()
    stubbed = stub_missing_packages()
    sys.path.insert(0, os.path.join(os.path.abspath(args.kernelbench), "src"))
    import torch
    from kernelbench import eval as kb_eval

    # KernelBench resets the peak memory statistics in its clean-up: read them just before.
    peak = {"mb": 0.0, "reserved_mb": 0.0}
    cleanup = kb_eval.graceful_eval_cleanup

    def cleanup_reading_peak(context, device, tempfile=None):
        peak["mb"] = torch.cuda.max_memory_allocated(device) / 2**20
        peak["reserved_mb"] = torch.cuda.max_memory_reserved(device) / 2**20
        return cleanup(context, device, tempfile)

    kb_eval.graceful_eval_cleanup = cleanup_reading_peak
    precision = kb_eval.get_torch_dtype_from_string(args.precision)
    device = torch.device("cuda:0")
    for problem in args.problems:
        source = open(problem).read()
        torch.cuda.reset_peak_memory_stats(device)
        free, total = torch.cuda.mem_get_info(device)  # what the device holds besides this allocator's:
        beside_mb = (total - free - torch.cuda.memory_reserved(device)) / 2**20  # the context, mostly
        peak["mb"], peak["reserved_mb"], error, result = 0.0, 0.0, "", None
        started = time.perf_counter()
        try:
            result = kb_eval.eval_kernel_against_ref(
                source, kernelbench_tasks.identity_source(source), seed_num=42, num_correct_trials=args.correct_trials,
                num_perf_trials=args.perf_trials, measure_performance=True, timing_method="cuda_event",
                device=device, backend="cuda", precision=precision)
        except Exception as exc:  # KernelBench lets some failures escape (e.g. out of memory building a model)
            error = f"{type(exc).__name__}: {exc}"[:300]
            torch.cuda.empty_cache()
        wall = time.perf_counter() - started
        if result is not None and not error:
            metadata = getattr(result, "metadata", {}) or {}
            error = str(metadata.get("runtime_error") or metadata.get("correctness_issue") or "")[:300]
        print(json.dumps({"problem": os.path.basename(problem),
                          "correct": bool(result is not None and result.correctness),
                          "runtime_us": getattr(result, "runtime", -1.0),
                          "ref_runtime_us": getattr(result, "ref_runtime", -1.0),
                          "wall_s": wall, "peak_device_memory_mb": peak["mb"],
                          "device_memory_mb": beside_mb + peak["reserved_mb"], "error": error}), flush=True)
    print(json.dumps({"stubbed": stubbed}), flush=True)


if __name__ == "__main__":
    main()
