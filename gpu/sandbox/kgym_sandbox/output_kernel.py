"""The judge's one-pass output checks on the GPU (gpu/checks/output_checks.cu), through
ctypes: `compare.measure`'s totals without PyTorch's ~40 passes over the data. Only the
judge loads it ($KGYM_CHECKS_LIB, set by the executor on the GPU); where it is absent,
compare.measure uses PyTorch's operators (the same rule, value by value)."""
import ctypes
import os

import torch

DTYPES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2, torch.float64: 3}
THREADS = 256
MAX_BLOCKS = 1024   # enough to fill an H100 (132 SMs) several times over
VALUES_PER_THREAD = 16

_library = {}


def library():
    """The loaded library, or None (not on this machine, or not loadable)."""
    path = os.environ.get("KGYM_CHECKS_LIB", "")
    if path not in _library:
        try:
            lib = ctypes.CDLL(path) if path else None
        except OSError:
            lib = None
        if lib is not None:
            lib.kgym_measure.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_longlong, ctypes.c_int,
                                         ctypes.c_double, ctypes.c_double, ctypes.c_void_p, ctypes.c_int,
                                         ctypes.c_void_p]
            lib.kgym_measure.restype = ctypes.c_int
        _library[path] = lib
    return _library[path]


def totals(expected: torch.Tensor, actual: torch.Tensor, atol: float, rtol: float):
    """compare.COLUMNS totals summed over the values, then the same as maxima (in the order of
    output_checks.cu's Column), as one float64 tensor on the device; None where the
    kernel does not apply (no library, not on the GPU, a dtype it does not know)."""
    code = DTYPES.get(expected.dtype)
    lib = library() if code is not None and expected.is_cuda and actual.is_cuda else None
    if lib is None or expected.device != actual.device or expected.numel() == 0:
        return None
    e, a = expected.detach().reshape(-1), actual.detach().reshape(-1)  # contiguous (a copy if it was not)
    columns = lib.kgym_measure_columns()
    blocks = max(1, min(MAX_BLOCKS, -(-e.numel() // (THREADS * VALUES_PER_THREAD))))
    partials = torch.empty((blocks, columns), dtype=torch.float64, device=e.device)
    status = lib.kgym_measure(e.data_ptr(), a.data_ptr(), e.numel(), code, float(atol), float(rtol),
                              partials.data_ptr(), blocks, torch.cuda.current_stream(e.device).cuda_stream)
    if status != 0:
        raise RuntimeError(f"kgym_measure failed (CUDA error {status})")
    return torch.cat([partials.sum(0), partials.amax(0)])
