"""The candidate in the judge's own process: the plain in-process harness of the benchmarks
(bench/plain_harness.py), the baseline for what isolation costs. Same interface as
RemoteCandidate, none of its protection: never used for a verdict that counts."""
import os
import time

import torch

from . import compare, cost_model, failures, program, timing


class LocalCandidate:
    traced = False
    isolation = []

    def __init__(self, device: str, source: str, workdir: str, recorder):
        self.device, self.source, self.workdir, self.recorder = device, source, workdir, recorder
        self.model, self.inputs = None, []

    overhead_s = 0.0

    def hello(self) -> None:
        pass

    def build(self, init_inputs: list, seed: int) -> list:
        self.recorder.candidate_file = os.path.join(self.workdir, "kgym_candidate.py")
        try:
            module = program.load_program(self.recorder.candidate_file, "kgym_candidate", self.source, {})
            torch.manual_seed(seed)
            with torch.device(self.device):
                self.model = module.ModelNew(*init_inputs)
        except BaseException as exc:
            raise failures.Failure("COMPILE_ERROR", "load", "candidate does not load: " + failures.last_line(exc))
        return []

    def fill(self, inputs: list, phase: str) -> None:
        self.inputs = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]

    def run(self, mode: str, phase: str, model=None):
        model = model or self.model
        model.train(mode == "train")
        try:
            out = model(*self.inputs)
            if self.device == "cuda":
                torch.cuda.synchronize()
            return compare.flatten(out)
        except BaseException as exc:
            raise failures.failure_from(exc, phase, f"forward ({mode} mode)")

    def call(self, mode: str, seed: int, phase: str, expected: list) -> tuple:
        torch.manual_seed(seed)
        self.recorder.mode = mode
        try:
            out = self.run(mode, phase)
        finally:
            self.recorder.mode = None
        return out, "", compare.aliases(out, self.inputs), []

    def timed_call(self, expected: list, phase: str = None, null: bool = False) -> tuple:
        t0 = time.perf_counter()
        out = self.run("eval", "timing", timing.NullModel() if null else None)
        return max(time.perf_counter() - t0 - (0.0 if null else self.overhead_s), 0.0), out

    def readout(self, answer, expected: list) -> tuple:
        return answer, ""

    def profile(self, mode: str, expected: list) -> tuple:
        self.model.train(mode == "train")
        given = []
        work, seconds = cost_model.pytorch_work(self.model, self.inputs, self.recorder, given)
        return work, seconds, compare.flatten(given[0]), ""

    def launches(self) -> list:
        return self.recorder.records()

    def finish(self) -> None:
        pass
