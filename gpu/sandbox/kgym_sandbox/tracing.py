"""Talks to the trace library the executor named: on the GPU gpu/cupti's injection library
(every kernel, its phase, its launcher), on the CPU gpu/trace's (the phase calls only). Both
authenticate each record under a key they read from a pipe before the candidate's code
exists; this process never reads it."""
import ctypes
import os

from .frames import kgym_pb2

# The trace's phases are the schema's (kgym.proto: TracePhase); a call is (kind, rep), rep
# counting TRACE_TIMED's reps.
UNTRACED = (kgym_pb2.TRACE_UNTRACED, 0)
CHECKS = (kgym_pb2.TRACE_CHECKS, 0)
BATCH = (kgym_pb2.TRACE_BATCH, 0)
IDLE = (kgym_pb2.TRACE_IDLE, 0)
DELIVER = (kgym_pb2.TRACE_DELIVER, 0)


def mode_phase(mode: str) -> tuple:
    """A correctness call's phase: TRACE_TRAIN for "train", TRACE_EVAL for "eval"."""
    return kgym_pb2.TracePhase.Value("TRACE_" + mode.upper()), 0


def timed_phase(rep: int) -> tuple:
    return kgym_pb2.TRACE_TIMED, rep

TRACE_FILE = "trace.jsonl"


def traced(device: str) -> bool:
    """Whether this evaluation gets a trace (and so a key)."""
    return bool(library_path(device))


def library_path(device: str) -> str:
    return os.environ.get("KGYM_CUPTI_LIB" if device == "cuda" else "KGYM_TRACE_LIB", "")


def preload(device: str) -> None:
    """Before confinement: the library may live where the sandbox's private /tmp hides it
    (a build under /tmp). Loaded now, later loads of the same path (the CUDA driver's, the
    Tracer's) find it already there."""
    if library_path(device):
        ctypes.CDLL(library_path(device))


def start(workdir: str, key_fd: int, device: str) -> None:
    """Before the candidate's code: on the GPU, before CUDA starts, have the driver load the
    injection library (it reads the key when CUDA initialises); on the CPU, load the trace
    library and have it read the key now."""
    os.environ["KGYM_TRACE_FILE"] = os.path.join(workdir, TRACE_FILE)
    os.environ["KGYM_TRACE_KEY_FD"] = str(key_fd)
    if device == "cuda":
        os.environ["CUDA_INJECTION64_PATH"] = library_path(device)
        os.environ["KGYM_CUPTI_GENERATED_ROOT"] = workdir
    elif ctypes.CDLL(library_path(device)).kgym_trace_start() != 0:
        raise RuntimeError("the trace library could not read its key or open its file")


class Tracer:
    def __init__(self, device: str, enabled: bool = True):
        library = library_path(device) if enabled else ""
        self.library = ctypes.CDLL(library) if library else None  # already loaded: the same one

    def phase(self, call: tuple) -> None:
        """Enters phase call (kind, rep): UNTRACED, BATCH, timed_phase(3), ..."""
        if self.library:
            self.library.kgym_trace_set_phase(ctypes.c_int(call[0]), ctypes.c_int(call[1]))

    def finish(self) -> None:
        """Flushes every record and writes the end record; the trace takes nothing after."""
        if self.library:
            self.library.kgym_trace_finish()
