"""The sandbox's long-lived parent: imports PyTorch and Triton once, then forks one fresh,
confined process per evaluation before anything touches CUDA, so every evaluation starts
with a clean CUDA context and start-up stays off the critical path.

stdin: SandboxCommand frames; stdout: SandboxEvent frames (kgym.proto, JSON mapping).
"""
import argparse
import ctypes
import fcntl
import json
import os
import platform
import select
import signal
import sys
import tempfile
import time

from . import protocol, tracing

PR_SET_CHILD_SUBREAPER = 36
MAX_RELAY_BYTES = 16 << 20  # a candidate flooding the result pipe is cut off here


def descendants(root: int, keep: set) -> list:
    """Every process below `root`, except those in `keep` and below them."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, frontier = [], [root]
    while frontier:
        pid = frontier.pop()
        for child in children.get(pid, []):
            if child not in keep:
                found.append(child)
                frontier.append(child)
    return found


def sweep(keep: set) -> int:
    """Kills whatever the evaluation left behind; as subreaper we inherit its orphans, and
    collect them (never the standby, whose owner waits for it)."""
    killed = set()
    for _ in range(100):
        left = descendants(os.getpid(), keep)
        if not left:
            break
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except ProcessLookupError:
                pass
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:  # not ours (yet): reparented to us once its parent dies
                pass
        time.sleep(0.01)
    return len(killed)


def memory_limits(device: str, memory_limit_mb: int) -> dict:
    with open("/proc/self/status") as f:
        vm_size_kb = int(next(line for line in f if line.startswith("VmSize:")).split()[1])
    # CUDA reserves far more address space than it uses, so on the GPU host memory is
    # bounded by the executor's RSS watchdog instead of RLIMIT_AS.
    address_space = None if device == "cuda" else vm_size_kb * 1024 + memory_limit_mb * (1 << 20)
    return {"RLIMIT_AS": address_space, "RLIMIT_CORE": 0, "RLIMIT_FSIZE": 1 << 30,
            "RLIMIT_NPROC": 1024, "RLIMIT_CPU": 1800}


class Standby:
    """A forked evaluation process made ahead of its request: it confines itself and, on the
    GPU, creates its CUDA context while the previous evaluation runs, so neither is on the
    critical path. Its warm-up holds the zygote's lock exclusively; an evaluation takes the
    lock shared before it starts timing, so a warm-up never overlaps a timed region."""

    def __init__(self, workdir: str, device: str, recorder, lock_fd: int, out_fd: int):
        self.workdir = workdir
        command_r, self.command_w = os.pipe()
        self.result_r, result_w = os.pipe()
        traced = tracing.traced(device)
        key_r, key_w = os.pipe() if traced else (-1, -1)
        self.pid = os.fork()
        if self.pid == 0:
            os.close(self.command_w)
            os.close(self.result_r)
            os.close(out_fd)  # the candidate must not reach the executor's channel
            if traced:
                os.close(key_w)
            standby_main(workdir, command_r, result_w, recorder, device, lock_fd, key_r)
        os.close(command_r)
        os.close(result_w)
        # The trace's key is made after the fork, so no copy of it exists in the child's
        # memory; the trace writer reads it from the pipe (tracing.start) before the candidate loads.
        self.trace_key = ""
        if traced:
            os.close(key_r)
            key = os.urandom(16)
            os.write(key_w, key)
            os.close(key_w)
            self.trace_key = key.hex()

    def start(self, command: dict) -> bool:
        try:
            protocol.write_frame(self.command_w, command)
            return True
        except OSError:  # it died while waiting
            return False
        finally:
            os.close(self.command_w)
            self.command_w = -1

    def discard(self) -> None:
        for fd in (self.command_w, self.result_r):
            if fd >= 0:
                os.close(fd)
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


def warm_cuda(lock_fd: int, seconds: dict) -> None:
    """Creates the CUDA context and the cuBLAS and cuDNN handles, holding the lock that keeps
    warm-ups out of the running evaluation's timed region. (Compiling a Triton kernel here
    too was tried on an H100: the lock then delayed the running evaluation's timing by the
    compile time, and throughput did not improve.)"""
    import torch
    started = time.perf_counter()
    fcntl.lockf(lock_fd, fcntl.LOCK_EX)
    try:
        torch.zeros(1, device="cuda")
        torch.ones(8, 8, device="cuda") @ torch.ones(8, 8, device="cuda")  # cuBLAS handle
        torch.nn.functional.conv2d(torch.ones(1, 1, 4, 4, device="cuda"),
                                   torch.ones(1, 1, 3, 3, device="cuda"))  # cuDNN handle
        torch.cuda.synchronize()
    finally:
        fcntl.lockf(lock_fd, fcntl.LOCK_UN)
    seconds["cuda_init"] = time.perf_counter() - started


def wait_for_quiet_gpu(lock_fd: int) -> None:
    fcntl.lockf(lock_fd, fcntl.LOCK_SH)
    fcntl.lockf(lock_fd, fcntl.LOCK_UN)


def read_command(fd: int):
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return None
        data += chunk
    return json.loads(data)


def standby_main(workdir: str, command_fd: int, result_fd: int, recorder, device: str, lock_fd: int,
                 key_fd: int) -> None:
    """In the forked process: confine, warm up, wait for the request, evaluate, send one
    result, exit without cleanup."""
    from . import evaluate, isolation
    log_fd = os.open(os.path.join(workdir, "sandbox.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    sys.stdout = os.fdopen(1, "w", buffering=1)
    sys.stderr = os.fdopen(2, "w", buffering=1)
    seconds, granted, confine_error = {}, [], None
    try:
        started = time.perf_counter()
        if key_fd >= 0:
            tracing.preload(device)
        granted, workdir = isolation.confine(workdir)
        seconds["confine"] = time.perf_counter() - started
        if key_fd >= 0:
            tracing.start(workdir, key_fd, device)
        if device == "cuda":
            warm_cuda(lock_fd, seconds)
    except BaseException as exc:  # reported once the request arrives; never run half-confined
        confine_error = exc
    command = read_command(command_fd)
    if command is None:
        os._exit(0)
    request = command["request"]
    result = {"request_id": request.get("request_id", ""), "task_id": request.get("task", {}).get("id", ""),
              "candidate_id": request.get("candidate", {}).get("id", ""), "harness_seconds": seconds}

    def phase(name):
        protocol.write_frame(result_fd, {"phase": {"name": name}})

    try:
        if confine_error is not None:
            raise evaluate.Failure("INTERNAL_ERROR", "confine", f"sandbox confinement failed: {confine_error!r}")
        limit_mb = int(request.get("options", {}).get("memory_limit_mb") or 4096)
        result["isolation"] = granted + isolation.set_limits(memory_limits(device, limit_mb))
        result["device_name"] = platform.processor() or "cpu"
        if device == "cuda":
            import torch
            result["device_name"] = torch.cuda.get_device_name()
        tracer = tracing.Tracer(device)
        try:
            evaluate.evaluate(request, workdir, recorder, phase, result, lambda: wait_for_quiet_gpu(lock_fd), tracer)
        finally:
            tracer.phase("untraced")
            tracer.finish()
    except evaluate.Failure as failure:
        result.update(verdict=failure.verdict, failed_phase=failure.phase, message=failure.message,
                      evidence=failure.evidence)
    except BaseException as exc:  # the harness itself broke: say so, do not blame the candidate
        failure = evaluate.failure_from(exc, "harness", "evaluation failed")
        result.update(verdict=failure.verdict, failed_phase="harness", message=failure.message)
    if "launches" not in result:
        result["launches"] = recorder.records()
    try:
        protocol.write_frame(result_fd, {"result": result})
    finally:
        sys.stdout.flush()
        os._exit(0)


def relay(result_fd: int, pid: int, out_fd: int, keep: set, trace_key: str) -> None:
    """Forwards the child's phase and result frames until it exits, then reports the exit."""
    reader = protocol.FrameReader(result_fd)
    relayed, status, drain_until = 0, None, None
    while True:
        ready, _, _ = select.select([result_fd], [], [], 0.05)
        lines = reader.read_available() if ready else []
        for line in lines or []:
            relayed += len(line)
            if relayed > MAX_RELAY_BYTES:
                break
            try:
                frame = json.loads(line)
            except ValueError:
                continue
            if isinstance(frame, dict) and len(frame) == 1 and next(iter(frame)) in ("phase", "result"):
                protocol.write_frame(out_fd, frame)
        if status is None:
            done, status_word = os.waitpid(pid, os.WNOHANG)
            if done:
                status, drain_until = status_word, time.monotonic() + 0.5
        # A leftover descendant may hold the pipe open: stop at the child's exit plus a drain.
        if status is not None and (lines is None or not ready or time.monotonic() > drain_until):
            break
    os.close(result_fd)
    swept = sweep(keep)
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 0
    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
    protocol.write_frame(out_fd, {"exit": {"pid": pid, "exit_code": code, "signal": sig, "swept": swept,
                                           "trace_key": trace_key}})


def warm_up_cpu() -> None:
    """Runs, once here, what every CPU evaluation would otherwise pay for on first use in
    its fresh process: Triton's interpreter and PyTorch's dispatch-mode machinery."""
    import torch
    import triton
    import triton.language as tl

    from . import cost_model

    @triton.jit
    def double_kernel(x_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n) * 2, mask=offsets < n)

    x = torch.ones(64)
    double_kernel[(1,)](x, 64, BLOCK=64)
    cost_model.pytorch_work(lambda a: torch.relu(a @ a.t()) + 1, [x.view(8, 8)])


def main() -> None:
    parser = argparse.ArgumentParser(description="kgym sandbox zygote (started by gpu_executor)")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    args = parser.parse_args()
    if args.device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    out_fd = os.dup(1)  # frames go here; whatever else prints goes to stderr
    os.dup2(2, 1)
    started = time.perf_counter()
    import torch
    import triton
    from . import compare, cost_model, evaluate, isolation, launches, timing, tracing  # noqa: F401  (before fork)
    recorder = launches.install(interpreted=args.device == "cpu")
    if args.device == "cpu":
        warm_up_cpu()
    ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    protocol.write_frame(out_fd, {"ready": {"python": platform.python_version(), "torch": torch.__version__,
                                       "triton": triton.__version__,
                                       "import_s": time.perf_counter() - started}})
    lock_fd, lock_path = tempfile.mkstemp(prefix="kgym-gpu-lock-")
    os.unlink(lock_path)  # children keep the open file; nobody else can reach it
    standby = None
    for line in sys.stdin:
        command = json.loads(line)
        if "shutdown" in command:
            break
        evaluation = command["evaluate"]
        if standby is not None and standby.workdir != evaluation["workdir"]:
            standby.discard()
            standby = None
        if standby is None:
            standby = Standby(evaluation["workdir"], args.device, recorder, lock_fd, out_fd)
        current, standby = standby, None
        if not current.start({"request": evaluation["request"]}):
            current.discard()  # the prepared process died: make a fresh one
            current = Standby(evaluation["workdir"], args.device, recorder, lock_fd, out_fd)
            current.start({"request": evaluation["request"]})
        protocol.write_frame(out_fd, {"started": {"pid": current.pid}})
        if evaluation.get("next_workdir"):
            standby = Standby(evaluation["next_workdir"], args.device, recorder, lock_fd, out_fd)
        relay(current.result_r, current.pid, out_fd, {standby.pid} if standby else set(), current.trace_key)
    if standby is not None:
        standby.discard()

if __name__ == "__main__":
    main()
