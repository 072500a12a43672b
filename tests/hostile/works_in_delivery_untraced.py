# GPU, square_matmul (appended to tests/hostile/untraced_base.py): its work moved into the
# deliveries, with its own process's trace switched off around it. Honest in the correctness
# trials and the traced calls; in the timed batches each call runs a token kernel of its own and
# returns an unwritten buffer; then, in each delivery, before the asked-for copies, it multiplies
# the named calls' inputs into those buffers with the CUPTI library's kernel records disabled
# (cuptiActivityDisable through ctypes: the library is mapped into its process), so its trace
# shows no kernel between its requests. Unchecked, its speedup is the matmul's time over a token
# kernel's; only the judge's clock around both sides' deliveries sees the work
# (delivery_slower_than_reference).
import sys

from kgym_sandbox import candidate_runner as _runner

_state = {"defer": False, "pending": [], "cupti": _cupti()}
print(f"works_in_delivery_untraced: CUPTI {'found' if _state['cupti'] else 'not found'}", file=sys.stderr, flush=True)
_batch, _deliver = _runner.OPS["batch"], _runner.OPS["deliver"]


def _timed_batch(runner, message, fds):
    _state["defer"] = "rep" not in message and message.get("keep", True) and _state["cupti"] is not None
    _state["pending"] = []
    try:
        return _batch(runner, message, fds)
    finally:
        _state["defer"] = False


def _working_delivery(runner, message, fds):
    calls = [int(call) for call in message.get("calls", []) if int(call) < len(_state["pending"])]
    cupti = _state["cupti"]
    if calls:
        cupti.cuptiActivityDisable(CONCURRENT_KERNEL)
        try:
            for call in calls:
                a, b, out = _state["pending"][call]
                torch.matmul(a, b, out=out)
            torch.cuda.synchronize()
        finally:
            cupti.cuptiActivityEnable(CONCURRENT_KERNEL)
    return _deliver(runner, message, fds)


_runner.OPS.update(batch=_timed_batch, deliver=_working_delivery)
