"""The sandbox's long-lived parent: imports PyTorch and Triton once, then forks one fresh,
confined process per evaluation before anything touches CUDA, so every evaluation starts
with a clean CUDA context and start-up stays off the critical path.

stdin: SandboxCommand frames; stdout: SandboxEvent frames (kgym.proto, JSON mapping).
"""
import argparse
import ctypes
import json
import os
import platform
import resource
import select
import signal
import sys
import time

from . import protocol

PR_SET_CHILD_SUBREAPER = 36
MAX_RELAY_BYTES = 16 << 20  # a candidate flooding the result pipe is cut off here


def descendants(root: int) -> list:
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
            found.append(child)
            frontier.append(child)
    return found


def sweep() -> int:
    """Kills whatever the evaluation left behind; as subreaper we inherit its orphans."""
    killed = set()
    for _ in range(100):
        left = descendants(os.getpid())
        if not left:
            break
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except ProcessLookupError:
                pass
        reap()
        time.sleep(0.01)
    return len(killed)


def reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def memory_limits(device: str, memory_limit_mb: int) -> dict:
    with open("/proc/self/status") as f:
        vm_size_kb = int(next(line for line in f if line.startswith("VmSize:")).split()[1])
    # CUDA reserves far more address space than it uses, so on the GPU host memory is
    # bounded by the executor's RSS watchdog instead of RLIMIT_AS.
    address_space = None if device == "cuda" else vm_size_kb * 1024 + memory_limit_mb * (1 << 20)
    return {"RLIMIT_AS": address_space, "RLIMIT_CORE": 0, "RLIMIT_FSIZE": 1 << 30,
            "RLIMIT_NPROC": 1024, "RLIMIT_CPU": 1800}


def run_evaluation(command: dict, result_fd: int, recorder, device: str) -> None:
    """In the forked process: confine, evaluate, send one result, exit without cleanup."""
    from . import evaluate, isolation
    request, workdir = command["request"], command["workdir"]
    log_fd = os.open(os.path.join(workdir, "sandbox.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    sys.stdout = os.fdopen(1, "w", buffering=1)
    sys.stderr = os.fdopen(2, "w", buffering=1)
    limit_mb = int(request.get("options", {}).get("memory_limit_mb") or 4096)
    result = {"request_id": request.get("request_id", ""),
              "task_id": request.get("task", {}).get("id", ""),
              "candidate_id": request.get("candidate", {}).get("id", "")}

    def phase(name):
        protocol.write_frame(result_fd, {"phase": {"name": name}})

    try:
        try:
            started = time.perf_counter()
            result["isolation"], workdir = isolation.confine(workdir, memory_limits(device, limit_mb))
            result["harness_seconds"] = {"confine": time.perf_counter() - started}
        except BaseException as exc:  # never run a candidate half-confined
            raise evaluate.Failure("INTERNAL_ERROR", "confine", f"sandbox confinement failed: {exc!r}")
        result["device_name"] = platform.processor() or "cpu"
        if device == "cuda":
            import torch
            started = time.perf_counter()
            result["device_name"] = torch.cuda.get_device_name()
            torch.zeros(1, device="cuda")
            result["harness_seconds"]["cuda_init"] = time.perf_counter() - started
        evaluate.evaluate(request, workdir, recorder, phase, result)
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


def relay(result_fd: int, pid: int, out_fd: int) -> None:
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
    swept = sweep()
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 0
    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
    protocol.write_frame(out_fd, {"exit": {"pid": pid, "exit_code": code, "signal": sig, "swept": swept}})


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
    from . import compare, evaluate, isolation, launches, timing  # noqa: F401  (import before fork)
    recorder = launches.install(interpreted=args.device == "cpu")
    ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    protocol.write_frame(out_fd, {"ready": {"python": platform.python_version(), "torch": torch.__version__,
                                       "triton": triton.__version__,
                                       "import_s": time.perf_counter() - started}})
    for line in sys.stdin:
        command = json.loads(line)
        if "shutdown" in command:
            break
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            os.close(out_fd)  # the candidate must not reach the executor's channel
            run_evaluation(command["evaluate"], write_fd, recorder, args.device)
        os.close(write_fd)
        protocol.write_frame(out_fd, {"started": {"pid": pid}})
        relay(read_fd, pid, out_fd)


if __name__ == "__main__":
    main()
