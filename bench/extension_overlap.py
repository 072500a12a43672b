"""Do CUDA candidates' builds overlap the GPU's evaluations? (issue: CUDA candidates.)

Starts `kgym serve --device cuda` with an empty extension cache and sends, at once, N CUDA
candidates that each need a build of their own (tests/extensions/gelu_fused.py, its kernel
source made distinct per candidate) and M Triton candidates (tasks/gelu_scale_residual's
fused.py). Serially, each CUDA candidate would hold the GPU for its build and its
evaluation: the baseline is the sum, over all answers, of what each took on its own
(harness_seconds extension_build + the evaluation's wall time). The table prints the wall
time of the whole batch against that sum; a ratio below 1 is time the build workers saved.

    python3 bench/extension_overlap.py --cuda 4 --triton 8
"""
import argparse
import os
import tempfile
import time

from local_serve import ROOT, local_serve


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kgym", default=os.path.join(ROOT, "build", "kgym"))
    parser.add_argument("--cuda", type=int, default=4, help="CUDA candidates, each with its own build")
    parser.add_argument("--triton", type=int, default=8, help="Triton candidates (no build)")
    args = parser.parse_args()
    cuda = open(os.path.join(ROOT, "tests", "extensions", "gelu_fused.py")).read()
    triton = open(os.path.join(ROOT, "tasks", "gelu_scale_residual", "candidates", "fused.py")).read()
    requests = [("gelu_scale_residual", cuda.replace("#include <cuda_runtime.h>", f"#include <cuda_runtime.h>\n// {i}"))
                for i in range(args.cuda)]
    requests += [("gelu_scale_residual", triton + f"\n# {i}\n") for i in range(args.triton)]
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "KGYM_EXTENSION_CACHE": os.path.join(tmp, "cache")}
        with local_serve(args.kgym, ["--device", "cuda"], tmp, env) as client:
            client.evaluate("gelu_scale_residual", triton)  # the sandbox started, off the clock
            started = time.perf_counter()
            answers = client.evaluate_many(requests)
            wall = time.perf_counter() - started
    results = [a["result"] for a in answers.values()]
    serial = sum(r.get("wall_s", 0) + r.get("harness_seconds", {}).get("extension_build", 0) for r in results)
    verdicts = {}
    for r in results:
        verdicts[r.get("verdict")] = verdicts.get(r.get("verdict"), 0) + 1
    builds = [r["harness_seconds"]["extension_compile"] for r in results
              if r.get("harness_seconds", {}).get("extension_compile", 0) > 0]
    print(f"machine: {results[0].get('device_name', '?')}; {args.cuda} CUDA candidates (a build each), "
          f"{args.triton} Triton candidates, sent at once to kgym serve --device cuda")
    print("| verdicts | builds | mean build s | batch wall s | serial sum s | wall / serial |")
    print("|---|---|---|---|---|---|")
    mean_build = sum(builds) / len(builds) if builds else 0.0
    print(f"| {verdicts} | {len(builds)} | {mean_build:.1f} | {wall:.1f} | {serial:.1f} | {wall / serial:.3f} |")


if __name__ == "__main__":
    main()
