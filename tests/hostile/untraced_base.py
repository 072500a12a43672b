# The pieces the candidates that switch their own trace off share (each is appended to this file:
# hostile_case.base): the CUPTI library the tracing library loaded into their process, reached
# through ctypes; a model (square_matmul's; another task's case defines its own) that runs a token
# kernel of its own in every call and computes the product only where it does not defer it
# (`_state`: "defer"; "pending", the deferred calls' inputs and unwritten outputs in the order of
# the batch's calls; "compute", what works one out); and the deferred calls worked out in the
# deliveries with the kernel records off (`work_in_deliveries`) or by a thread of its own after
# its answers (`work_after_answers`).
import ctypes
import sys
import threading
import time

import torch
import torch.nn as nn
import triton
import triton.language as tl

from kgym_sandbox import candidate_runner as _runner

CONCURRENT_KERNEL = 10  # CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL (cupti_activity.h)


@triton.jit
def _token_kernel(x_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets))


def _cupti():
    """The CUPTI library the tracing library loaded into this process, or None."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if "/libcupti.so" in path:
                return ctypes.CDLL(path)
    return None


class ModelNew(nn.Module):
    def forward(self, A, B):
        out = torch.empty((A.shape[0], B.shape[1]), dtype=A.dtype, device=A.device)
        _token_kernel[(1,)](out, BLOCK=128)  # a kernel of its own in every call's window
        if _state["defer"]:
            _state["pending"].append((A, B, out))
            return out
        return torch.matmul(A, B)


_state = {"batches": 0, "defer": False, "pending": [], "cupti": _cupti(),
          "compute": lambda call: torch.matmul(call[0], call[1], out=call[2])}
print(f"CUPTI {'found' if _state['cupti'] else 'not found'}", file=sys.stderr, flush=True)


def deferring(batch, defers):
    """The runner's batch op `batch`, counting the timed batches: the n-th (from 1) defers its
    calls (`_state["pending"]`, token outputs) where defers(n) says so."""
    def timed_batch(runner, message, fds):
        timed = "rep" not in message and message.get("keep", True) and _state["cupti"] is not None
        _state["batches"] += 1 if timed else 0
        _state["defer"] = timed and defers(_state["batches"])
        _state["pending"] = []
        try:
            return batch(runner, message, fds)
        finally:
            _state["defer"] = False
    return timed_batch


def _untraced_calls(pending: list, stream) -> None:
    """The deferred calls `pending` worked out on `stream` and waited for, with CUPTI's kernel
    records off."""
    _state["cupti"].cuptiActivityDisable(CONCURRENT_KERNEL)
    try:
        with torch.cuda.stream(stream):
            for call in pending:
                _state["compute"](call)
        stream.synchronize()
    finally:
        _state["cupti"].cuptiActivityEnable(CONCURRENT_KERNEL)


def work_in_deliveries(defers) -> None:
    """Its n-th timed batch (from 1) defers its calls where defers(n) says so; each delivery then
    works out the named deferred calls into their buffers with CUPTI's kernel records off, and
    copies as asked: nothing of it in the trace."""
    deliver = _runner.OPS["deliver"]

    def working_delivery(runner, message, fds):
        calls = [int(call) for call in message.get("calls", []) if int(call) < len(_state["pending"])]
        if calls:
            _untraced_calls([_state["pending"][call] for call in calls], torch.cuda.current_stream())
        return deliver(runner, message, fds)

    _runner.OPS.update(batch=deferring(_runner.OPS["batch"], defers), deliver=working_delivery)


def work_after_answers(defers, delay) -> None:
    """Its n-th timed batch (from 1) defers its calls where defers(n) says so and answers at
    once; a thread of its own then sleeps delay(last honest batch's seconds) and works them out
    (`_untraced_calls`). Its next request waits for that thread: a delivery copies finished
    outputs. Its runner's answer loop polls the socket for a while after each answer, holding the
    interpreter's lock, so the loop is made to block instead: with the polling (first written so,
    H200 2026-11-29) the thread got the lock only once the next request came."""
    batch, deliver = deferring(_runner.OPS["batch"], defers), _runner.OPS["deliver"]
    worker = {"thread": None, "honest_s": 0.0}

    def after(delay_s: float, pending: list) -> None:
        time.sleep(delay_s)
        _untraced_calls(pending, torch.cuda.Stream())  # a stream of this thread's

    def wait_for_work() -> None:
        if worker["thread"] is not None:
            worker["thread"].join()
            worker["thread"] = None

    def timed_batch(runner, message, fds):
        runner.channel.spin = False
        wait_for_work()
        t0 = time.perf_counter()
        answer = batch(runner, message, fds)
        if _state["pending"]:
            worker["thread"] = threading.Thread(target=after, args=(delay(worker["honest_s"]), _state["pending"]),
                                                daemon=True)
            worker["thread"].start()
        else:
            worker["honest_s"] = time.perf_counter() - t0
        return answer

    def delivery_after_work(runner, message, fds):
        wait_for_work()
        return deliver(runner, message, fds)

    _runner.OPS.update(batch=timed_batch, deliver=delivery_after_work)
