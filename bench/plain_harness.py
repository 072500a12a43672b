"""The baseline for the cost of isolation: the same evaluation function, run in one plain
Python process (no zygote, no fork, no confinement, no executor), the way an in-process
harness such as KernelBench's works. Prints one JSON line per evaluation."""
import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu", "sandbox"))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--pairs", required=True, help="JSON file: list of [task_dir, candidate_file]")
    parser.add_argument("--no-hacking-check", action="store_true")
    args = parser.parse_args()
    if args.device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    started = time.perf_counter()
    import torch  # noqa: F401
    from kgym_sandbox import evaluate, launches, local_candidate
    recorder = launches.install(interpreted=args.device == "cpu")
    imported = time.perf_counter() - started
    for task_dir, candidate_file in json.load(open(args.pairs)):
        meta = json.load(open(os.path.join(task_dir, "task.json")))
        request = {"device": args.device.upper(),
                   "task": {"id": os.path.basename(task_dir), "source": open(os.path.join(task_dir, "task.py")).read(),
                            "cpu_sizes": meta.get("cpu_sizes", {})},
                   "candidate": {"source": open(candidate_file).read()},
                   "options": {"apply_cpu_sizes": True, "no_hacking_check": args.no_hacking_check}}
        recorder.reset()
        result, t0 = {}, time.perf_counter()
        with tempfile.TemporaryDirectory() as workdir:
            try:
                candidate = local_candidate.LocalCandidate(args.device, request["candidate"]["source"], workdir, recorder)
                evaluate.evaluate(request, workdir, candidate, lambda name: None, result)
            except evaluate.Failure as failure:
                result["verdict"] = failure.verdict
            except Exception as exc:  # an in-process harness has no better answer than this
                result["verdict"] = "RUNTIME_ERROR"
                result["message"] = repr(exc)
        print(json.dumps({"task": request["task"]["id"], "candidate": os.path.basename(candidate_file),
                          "verdict": result.get("verdict"), "wall_s": time.perf_counter() - t0,
                          "timed_s": result.get("timed_s", 0.0), "speedup": result.get("speedup", 0.0)}),
              flush=True)
    print(json.dumps({"import_s": imported}), flush=True)


if __name__ == "__main__":
    main()
