"""Talks to gpu/cupti's injection library, when the executor injected it: labels what runs
next with a phase, turns tracing off around timed repetitions, ends the trace."""
import ctypes
import os

TRACE_FILE = "cupti.jsonl"


def inject(workdir: str, key_fd: int) -> None:
    """Before CUDA starts in this process: have the driver load the library, which reads the
    trace's key from `key_fd` when CUDA initialises (this process never reads it)."""
    library = os.environ.get("KGYM_CUPTI_LIB")
    if library:
        os.environ["CUDA_INJECTION64_PATH"] = library
        os.environ["KGYM_CUPTI_TRACE"] = os.path.join(workdir, TRACE_FILE)
        os.environ["KGYM_CUPTI_GENERATED_ROOT"] = workdir
        os.environ["KGYM_CUPTI_KEY_FD"] = str(key_fd)


class Tracer:
    def __init__(self):
        library = os.environ.get("CUDA_INJECTION64_PATH")
        self.library = ctypes.CDLL(library) if library else None

    def phase(self, name: str) -> None:
        if self.library:
            self.library.kgym_cupti_set_phase(name.encode())

    def finish(self) -> None:
        """Flushes every record and writes the end record; the trace takes nothing after."""
        if self.library:
            self.library.kgym_cupti_finish()
