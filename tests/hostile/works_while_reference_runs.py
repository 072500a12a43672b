# GPU, square_matmul (appended to tests/hostile/untraced_base.py): its work done while the
# reference's batch runs, with its own process's trace switched off. The judge alternates which
# side runs a batch pair first, starting with the reference; this candidate counts its timed
# batches, and in the pairs it runs first it answers at once (a token kernel of its own and
# unwritten buffers a call) and then, from a thread of its own with CUPTI's kernel records
# disabled (ctypes), multiplies that batch's inputs into those buffers while the judge times the
# reference, and waits for that thread before its delivery. Its deliveries only copy, so their
# time is honest; its trace shows nothing between its requests; unchecked, its time is half a
# token kernel's and the reference's batches that run after it are slowed by its work. Only the
# judge's comparison of the reference's batches after the candidate's with those before it sees
# that (reference_slowed_after_candidate).
import threading

_state["worker"] = None
_batch = deferring(_runner.OPS["batch"], lambda n: n % 2 == 0)  # its 2nd, 4th, ... batch: it runs first
_deliver = _runner.OPS["deliver"]


def _work(pending: list) -> None:
    cupti = _state["cupti"]
    cupti.cuptiActivityDisable(CONCURRENT_KERNEL)
    try:
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            for a, b, out in pending:
                torch.matmul(a, b, out=out)
        stream.synchronize()
    finally:
        cupti.cuptiActivityEnable(CONCURRENT_KERNEL)


def _wait_for_work() -> None:
    if _state["worker"] is not None:
        _state["worker"].join()
        _state["worker"] = None


def _timed_batch(runner, message, fds):
    _wait_for_work()
    answer = _batch(runner, message, fds)
    if _state["pending"]:
        _state["worker"] = threading.Thread(target=_work, args=(_state["pending"],), daemon=True)
        _state["worker"].start()
    return answer


def _delivery_after_work(runner, message, fds):
    _wait_for_work()
    return _deliver(runner, message, fds)


_runner.OPS.update(batch=_timed_batch, deliver=_delivery_after_work)
