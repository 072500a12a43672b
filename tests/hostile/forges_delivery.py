# Honest in its work, but after each timed batch it opens a delivery of its own (the phase calls
# the runner makes when the judge has outputs delivered): were such windows admitted, the copies
# in them would be its free time off the judge's clock. A delivery the judge never asked for is a
# phase call of the candidate's own (GPU and CPU: phase_sequence).
from kgym_sandbox import candidate_runner as _runner
from kgym_sandbox import tracing as _tracing

_batch = _runner.OPS["batch"]


def _batch_then_delivery(runner, message, fds):
    answer = _batch(runner, message, fds)
    if "rep" not in message:  # a timed batch's idle call was the last: a delivery may open now
        runner.tracer.phase(_tracing.DELIVER)
        runner.tracer.phase(_tracing.IDLE)
    return answer


_runner.OPS["batch"] = _batch_then_delivery
