"""Counts launches of Triton kernels whose code came from the candidate's file.

This is the Python-level launch record: installed in the zygote before any candidate code
exists, keyed on the file a kernel's code object was compiled from. On the GPU, the CUPTI
trace is the stronger evidence (it sees launches that bypass Triton's Python entry points).
"""
import collections

from . import cost_model

class LaunchRecorder:
    def __init__(self, source: str):
        self.source = source
        self.candidate_file = None  # set once the candidate is written to disk
        self.mode = None
        self.counts = collections.Counter()
        self.names = collections.defaultdict(set)
        self.in_generated_launch = False  # the interpreter is running one of the candidate's kernels
        self.traffic = None  # cost_model.KernelTraffic of the generated kernel running now
        self.modeled_kernel_seconds = 0.0  # the cost model's GPU seconds of generated kernels

    def reset(self) -> None:
        """Forgets earlier launches (a forked evaluation starts with none anyway)."""
        self.counts.clear()
        self.names.clear()

    def note(self, fn, warmup: bool) -> bool:
        """True when `fn` is one of the candidate's kernels; counted while a mode is set."""
        code = getattr(getattr(fn, "fn", None), "__code__", None)
        if warmup or code is None or code.co_filename != self.candidate_file:
            return False
        if self.mode is not None:
            self.counts[self.mode] += 1
            self.names[self.mode].add(code.co_name)
        return True

    def note_call(self, name: str) -> None:
        """A call into one of the candidate's CUDA extensions (extensions.install_loader):
        counted as a launch of its own kernel, as a Triton launch is; on the GPU the CUPTI
        trace then says whether a kernel of that library really ran."""
        if self.mode is not None:
            self.counts[self.mode] += 1
            self.names[self.mode].add(name)

    def records(self) -> list:
        return [{"mode": mode, "generated_launches": self.counts[mode],
                 "kernel_names": sorted(self.names[mode]), "source": self.source}
                for mode in ("train", "eval")]


def install(interpreted: bool) -> LaunchRecorder:
    """Wraps the one method every Triton launch goes through (jit, autotune, heuristics)."""
    if interpreted:
        from triton.runtime.interpreter import InterpretedFunction as launcher_class
        recorder = LaunchRecorder("triton_interpreter")
    else:
        from triton.runtime.jit import JITFunction as launcher_class
        recorder = LaunchRecorder("triton_launch_hook")
    original_run = launcher_class.run

    def run(self, *args, grid, warmup, **kwargs):
        if not recorder.note(self, warmup):
            return original_run(self, *args, grid=grid, warmup=warmup, **kwargs)
        recorder.in_generated_launch = True
        recorder.traffic = cost_model.KernelTraffic() if interpreted else None
        try:
            return original_run(self, *args, grid=grid, warmup=warmup, **kwargs)
        finally:
            recorder.in_generated_launch = False
            if recorder.traffic is not None:
                recorder.modeled_kernel_seconds += recorder.traffic.seconds()
                recorder.traffic = None

    launcher_class.run = run
    if interpreted:
        count_interpreter_traffic(recorder)
    return recorder


def count_interpreter_traffic(recorder: LaunchRecorder) -> None:
    """Feeds the cost model what a generated kernel does in the interpreter: the addresses
    of its loads and stores and the FLOPs of its dots (every tl.load/tl.store, block pointer
    or not, ends in the masked builder calls)."""
    from triton.runtime.interpreter import InterpreterBuilder as builder

    load, store, dot = builder.create_masked_load, builder.create_masked_store, builder.create_dot

    def element_bytes(ptrs) -> int:
        return max(1, ptrs.get_element_ty().primitive_bitwidth // 8)

    def masked_load(self, ptrs, mask, *args):
        if recorder.traffic is not None:
            recorder.traffic.touch(ptrs.data, mask.data, element_bytes(ptrs))
        return load(self, ptrs, mask, *args)

    def masked_store(self, ptrs, value, mask, *args):
        if recorder.traffic is not None:
            recorder.traffic.touch(ptrs.data, mask.data, element_bytes(ptrs))
        return store(self, ptrs, value, mask, *args)

    def dot_op(self, a, b, d, *args):
        if recorder.traffic is not None:
            m, k = a.data.shape[-2:]
            recorder.traffic.flops += 2.0 * m * k * b.data.shape[-1] * max(1, a.data.size // (m * k))
        return dot(self, a, b, d, *args)

    builder.create_masked_load, builder.create_masked_store, builder.create_dot = masked_load, masked_store, dot_op
