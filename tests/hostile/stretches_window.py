# GPU: contends with the reference like contends_reference (a busy thread between its own
# batches), and hides that work inside its trace's batch windows by holding back each idle
# phase call until its next phase call: the windows then cover the reference's batches, and
# each is longer than the judge's clock around its request.
import threading
import time

from kgym_sandbox import candidate_runner as _runner
from kgym_sandbox import tracing as _tracing

_answering = threading.Event()
_batch = _runner.OPS["batch"]


class _HoldingTracer:
    def __init__(self, tracer):
        self.tracer, self.held = tracer, False

    def phase(self, call):
        if call == _tracing.IDLE:
            self.held = True
            return
        if self.held:
            self.tracer.phase(_tracing.IDLE)
            self.held = False
        self.tracer.phase(call)

    def finish(self):
        self.tracer.finish()


def _holding_batch(runner, message, fds):
    if not isinstance(runner.tracer, _HoldingTracer):
        runner.tracer = _HoldingTracer(runner.tracer)
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


_runner.OPS["batch"] = _holding_batch
threading.Thread(target=_contend, daemon=True).start()
