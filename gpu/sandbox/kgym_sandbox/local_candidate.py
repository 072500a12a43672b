"""The candidate in the judge's own process: the plain in-process harness of the benchmarks
(bench/plain_harness.py), the baseline for what isolation costs. Same interface as
RemoteCandidate, none of its protection: never used for a verdict that counts."""
import os
import time

import torch

from . import compare, cost_model, device_memory, failures, precision, program


class LocalCandidate:
    traced = False
    isolation = []

    def __init__(self, device: str, source: str, workdir: str, recorder):
        self.device, self.source, self.workdir, self.recorder = device, source, workdir, recorder
        self.model, self.inputs, self.sets, self.outputs = None, [], [[]], []

    overhead_s = 0.0

    @classmethod
    def serving(cls, model, device: str):
        """The judge's own reference model behind this interface (the timed reference when
        there is no reference runner)."""
        side = cls(device, "", "", None)
        side.model = model
        return side

    def hello(self) -> None:
        pass

    def build(self, init_inputs: list, seed: int, overrides: dict = None, dtype=torch.float32) -> list:
        self.recorder.candidate_file = os.path.join(self.workdir, "kgym_candidate.py")
        try:
            module = program.load_program(self.recorder.candidate_file, "kgym_candidate", self.source, {})
            torch.manual_seed(seed)
            with torch.device(self.device):
                self.model = precision.move(module.ModelNew(*init_inputs), dtype)
        except BaseException as exc:
            raise failures.Failure("COMPILE_ERROR", "load", "candidate does not load: " + failures.last_line(exc))
        return []

    def load_state(self, model) -> None:
        if model is not self.model:
            self.model.load_state_dict(model.state_dict())

    def start_build(self, init_inputs: list, seed: int, overrides: dict = None, dtype=torch.float32) -> tuple:
        return init_inputs, seed, overrides, dtype

    def built(self, started: tuple) -> list:
        return self.build(*started)

    def fill_sets(self, sets: list, phase: str) -> None:
        self.sets = [[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs] for inputs in sets]
        self.inputs = self.sets[0]

    def fill(self, inputs: list, phase: str) -> None:
        self.fill_sets([inputs], phase)

    def input_targets(self, k: int) -> list:
        return []  # its sets are clones: nothing to make in place

    def reserve_sets(self, k: int, pattern: list = None) -> list:
        return []

    def let_go(self) -> None:
        self.inputs, self.sets, self.outputs = [], [[]], []

    def expect(self, expected: list, phase: str, k: int = 1) -> None:
        self.outputs = [None] * k

    def run(self, mode: str, phase: str, model=None, inputs=None):
        model = model or self.model
        model.train(mode == "train")
        try:
            return compare.flatten(model(*(inputs if inputs is not None else self.inputs)))
        except BaseException as exc:
            raise failures.failure_from(exc, phase, f"forward ({mode} mode)")

    def start_warm(self, inputs: list) -> None:
        return None  # in the judge's process: its first reference call warmed this one too

    def finish_warm(self, pending) -> None:
        pass

    def start_call(self, mode: str, seed: int, phase: str, pattern: list) -> tuple:
        return self.call(mode, seed, phase, pattern)

    def finish_call(self, pending: tuple) -> tuple:
        return pending

    def call(self, mode: str, seed: int, phase: str, expected: list) -> tuple:
        torch.manual_seed(seed)
        self.recorder.mode = mode
        try:
            out = self.run(mode, phase)
        finally:
            self.recorder.mode = None
        return out, "", compare.aliases(out, self.inputs), []

    def timed_batch(self, k: int, rep: int = None, raw: bool = False, passes: int = 1) -> tuple:
        t0 = time.perf_counter()
        with torch.no_grad():
            for _ in range(passes):
                self.outputs = [[t.clone() for t in self.run("eval", "timing", None, inputs)]
                                for inputs in self.sets[:k]]
        if self.device == "cuda":
            torch.cuda.synchronize()
        return max(time.perf_counter() - t0 - (0.0 if raw else self.overhead_s), 0.0), {}

    def start_batch(self, k: int, passes: int = 1) -> tuple:
        return self.timed_batch(k, passes=passes)

    def finish_batch(self, pending: tuple) -> None:
        pass

    def slot_output(self, i: int) -> list:
        return self.outputs[i]

    def delivered_output(self, call: int, j: int) -> list:
        return self.outputs[call]

    def delivery_size(self) -> int:
        return max(len(self.outputs), 1)

    def deliver(self, calls: list, done: bool = True) -> None:
        pass  # its outputs are the judge's own

    def profile(self, mode: str, seed: int, expected: list) -> tuple:
        self.model.train(mode == "train")
        torch.manual_seed(seed)
        given = []
        work, seconds = cost_model.pytorch_work(self.model, self.inputs, self.recorder, given)
        return work, seconds, compare.flatten(given[0]), ""

    def launches(self) -> list:
        return self.recorder.records()

    def release(self, phase: str) -> None:
        device_memory.release(self.device)

    def move(self, pad_bytes: int, phase: str) -> None:
        """In the judge's own process no pad is held: its cache is given back only."""
        device_memory.release(self.device)

    def finish(self) -> list:
        return []  # this process's flags are the judge's, recorded as such
