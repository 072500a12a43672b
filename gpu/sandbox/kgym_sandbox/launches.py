"""Counts launches of Triton kernels whose code came from the candidate's file.

This is the Python-level launch record: installed in the zygote before any candidate code
exists, keyed on the file a kernel's code object was compiled from. On the GPU, the CUPTI
trace is the stronger evidence (it sees launches that bypass Triton's Python entry points).
"""
import collections

class LaunchRecorder:
    def __init__(self, source: str):
        self.source = source
        self.candidate_file = None  # set once the candidate is written to disk
        self.mode = None
        self.counts = collections.Counter()
        self.names = collections.defaultdict(set)
        self.in_generated_launch = False  # the interpreter is running one of the candidate's kernels

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
        try:
            return original_run(self, *args, grid=grid, warmup=warmup, **kwargs)
        finally:
            recorder.in_generated_launch = False

    launcher_class.run = run
    return recorder
