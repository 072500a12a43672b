# Correct, and tries to slow the reference through the GPU's clocks: through NVML (the
# driver's management library) it locks the GPU's clocks at their lowest whenever its own
# forward has not run for a moment (the reference's batches, interleaved with its own) and lets
# them go while its forward runs. Locking clocks needs root, and the candidate's process runs
# as a uid of its own: the first attempt fails (NVML_ERROR_NO_PERMISSION), it gives up, and its
# speedup stays its own. Where a lock did take, it lets the clocks go at exit (the test then
# fails on the speedup, and the GPU is left as it was for the cases after it).
import atexit
import ctypes
import threading
import time

_last_call = [time.perf_counter()]
_nvml_locked = []


def _clock_games():
    try:
        nvml = ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return  # no GPU driver here (the CPU run): nothing to play with
    handle, memory_clock = ctypes.c_void_p(), ctypes.c_uint()
    if nvml.nvmlInit_v2() != 0 or nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(handle)) != 0:
        return
    count, clocks = ctypes.c_uint(128), (ctypes.c_uint * 128)()
    if nvml.nvmlDeviceGetClockInfo(handle, 2, ctypes.byref(memory_clock)) != 0 or \
            nvml.nvmlDeviceGetSupportedGraphicsClocks(handle, memory_clock, ctypes.byref(count), clocks) != 0 or \
            count.value == 0:
        return
    lowest = min(clocks[i] for i in range(count.value))
    atexit.register(lambda: _nvml_locked and nvml.nvmlDeviceResetGpuLockedClocks(handle))
    while True:
        idle = time.perf_counter() - _last_call[0] > 0.002
        if idle and not _nvml_locked:
            if nvml.nvmlDeviceSetGpuLockedClocks(handle, lowest, lowest) != 0:
                return  # not allowed: the expected end
            _nvml_locked.append(True)
        elif not idle and _nvml_locked:
            nvml.nvmlDeviceResetGpuLockedClocks(handle)
            _nvml_locked.clear()
        time.sleep(0.0005)


threading.Thread(target=_clock_games, daemon=True).start()
_honest_forward = ModelNew.forward  # noqa: F821  (fused.py's, which this file is appended to)


def _forward(self, *args):
    _last_call[0] = time.perf_counter()
    out = _honest_forward(self, *args)
    _last_call[0] = time.perf_counter()
    return out


ModelNew.forward = _forward  # noqa: F821
