# GPU: correct, and makes the reference look slow: a thread of its own keeps the GPU busy
# whenever its process is not answering a timed batch (the judge times the reference runner
# then), and stays quiet inside its own batches. Its trace shows that work between its windows.
import threading
import time

import torch  # its own: as stretches_window's base its thread starts before the fused candidate's imports

from kgym_sandbox import candidate_runner as _runner

_answering = threading.Event()
_batch = _runner.OPS["batch"]


def _quiet_batch(runner, message, fds):
    _answering.set()
    try:
        return _batch(runner, message, fds)
    finally:
        _answering.clear()


def _contend():
    stream = torch.cuda.Stream()
    a = torch.randn(2048, 2048, device="cuda")
    with torch.cuda.stream(stream):
        while True:
            if _answering.is_set():
                time.sleep(0.0001)
                continue
            for _ in range(4):
                a = torch.tanh(a @ a)
            stream.synchronize()


_runner.OPS["batch"] = _quiet_batch
threading.Thread(target=_contend, daemon=True).start()
