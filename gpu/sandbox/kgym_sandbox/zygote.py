"""The sandbox's long-lived parent: imports PyTorch and Triton once, then forks one fresh,
confined process per evaluation before anything touches CUDA, so every evaluation starts
with a clean CUDA context and start-up stays off the critical path.

stdin: SandboxCommand frames; stdout: SandboxEvent frames (kgym.proto, JSON mapping).
"""
import argparse
import ctypes
import errno
import fcntl
import json
import os
import platform
import select
import signal
import sys
import tempfile
import time

from . import cgroups, channel, frames, gpu_processes, isolation, protocol, tracing
from .laps import Laps
from .proc_tree import descendants, unfit

PR_SET_CHILD_SUBREAPER = 36
MAX_RELAY_BYTES = 16 << 20  # a candidate flooding the result pipe is cut off here
# The prepared candidate's private disk until its request's disk_limit_mb is known (its
# start): room for what the warm-up writes.
PREPARE_DISK_MB = 256
# Tries at making the running evaluation's processes when a fork is refused (Pair, prepare).
FORK_ATTEMPTS = 5


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


def kill_tree(root: int, keep: set) -> None:
    """SIGKILLs `root` and every process below it, listing until no new one appears: a process
    with SIGKILL pending can no longer fork, and a child it made before is listed in /proc, below
    it or, once it is gone, below the pid namespace's init (`root`, when it is that) or the
    subreaper (this zygote, whose sweep follows). None of it runs again, though the kernel may
    still be tearing it down (a CUDA context takes ~0.1 s to go)."""
    killed, left = set(), {root}
    while left:
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        killed |= left
        left = set(descendants(root, keep)) - killed


class Pair:
    """The processes of one evaluation, forked ahead of its request: the judge (trusted:
    task, reference, inputs, comparison, clocks, verdict; the only process whose frames reach
    the executor), the candidate process (untrusted: the candidate's code, answering the
    judge over a socket pair) and the reference runner (trusted, the judge's uid: the task's
    own Model served through the very runner the candidate's process runs, so the judge times
    both sides through the same path and what a request costs falls alike on both). Each
    confines itself in its own directory and, on the GPU, creates its CUDA context while the
    previous evaluation runs. Warm-ups hold the zygote's lock shared (an evaluation's
    processes warm up at once); a judge takes it exclusively for a moment before it starts
    timing, so a warm-up never overlaps a timed region."""

    def __init__(self, workdir: str, device: str, recorder, lock_fd: int, out_fd: int, bindings: dict,
                 candidate_uid: int, cgroup_parents: dict, pid_namespaces: isolation.PidNamespaces):
        self.workdir = workdir
        self.candidate_uid = candidate_uid
        self.judge_pid = self.candidate_pid = self.reference_pid = 0  # 0: not forked (discard skips it)
        self.command_w = self.result_r = self.hold_w = -1
        judge_dir, candidate_dir, reference_dir = (os.path.join(workdir, name)
                                                   for name in ("judge", "candidate", "reference"))
        for path in (judge_dir, candidate_dir, reference_dir):
            os.makedirs(path, exist_ok=True)
        self.candidate_dir = candidate_dir
        self.candidate_tasks = isolation.candidate_tasks  # what its candidate is held to (hold_next_candidate_tasks)
        started = time.perf_counter()
        self.private_disk = isolation.mount_private_disk(candidate_dir, PREPARE_DISK_MB)
        self.seconds = {"pair_private_disk": time.perf_counter() - started}  # harness_seconds, via the judge
        started = time.perf_counter()
        self.cgroup, self.tasks_cgroup, self.cpu_cgroup = self.make_cgroups(
            cgroup_parents, f"kgym-{os.getpid()}-{os.path.basename(workdir)}")
        self.seconds["pair_cgroup"] = time.perf_counter() - started
        os.chmod(workdir, 0o711)  # each process reaches its own directory, lists neither
        zygote = os.getpid()
        ends, fds = [], []  # this process's copies of what only the forks need, closed below
        try:
            command_r, self.command_w = os.pipe()
            fds.append(command_r)
            self.result_r, result_w = os.pipe()
            fds.append(result_w)
            judge_end, candidate_end = channel.pair()
            ends += [judge_end, candidate_end]
            # The candidate process waits on `hold` after its last answer, until the judge's result
            # is in (relay): what it left running is counted then, before it exits and its pid
            # namespace takes them with it.
            hold_r, self.hold_w = os.pipe()
            fds.append(hold_r)
            judge_reference_end, reference_end = channel.pair()
            ends += [judge_reference_end, reference_end]
            traced = tracing.traced(device)
            self.traced = traced
            key_r, key_w = os.pipe() if traced else (-1, -1)
            # The reference runner records its batches as the candidate's process does (the same
            # recording cost on both sides of the ratio), under a key of its own that nobody reads.
            reference_key_r, reference_key_w = os.pipe() if traced else (-1, -1)
            fds += [fd for fd in (key_r, key_w, reference_key_r, reference_key_w) if fd >= 0]
            self.judge_pid = os.fork()
            if self.judge_pid == 0:
                keep_only([judge_end, judge_reference_end], [candidate_end, reference_end], {command_r, result_w, lock_fd})
                judge_main(judge_dir, command_r, result_w, judge_end, judge_reference_end, device, lock_fd)
            # The candidate in a pid namespace of its own where the OS grants one (its pid here is
            # its pid in ours: the executor watches and kills it by that).
            self.candidate_pid, _ = pid_namespaces.fork()
            if self.candidate_pid == 0:
                keep_only([candidate_end], [judge_end, judge_reference_end, reference_end], {key_r, hold_r, lock_fd})
                runner_main("candidate", candidate_dir, candidate_end, recorder, device, lock_fd, key_r, bindings,
                            candidate_uid, hold_r)
            started = time.perf_counter()
            for cgroup in self.cgroups:
                if not cgroup.add(self.candidate_pid):  # before its code exists
                    cgroup.remove()
                    if self.cgroup is cgroup:
                        self.cgroup = None
                    if self.tasks_cgroup is cgroup:
                        self.tasks_cgroup = None
                    if self.cpu_cgroup is cgroup:
                        self.cpu_cgroup = None
            self.seconds["pair_cgroup"] += time.perf_counter() - started
            self.reference_pid = os.fork()
            if self.reference_pid == 0:
                keep_only([reference_end], [judge_end, candidate_end, judge_reference_end], {reference_key_r, lock_fd})
                runner_main("reference", reference_dir, reference_end, recorder, device, lock_fd, reference_key_r, {},
                            isolation.JUDGE_UID)
        except BaseException:
            if os.getpid() != zygote:  # a child whose main returned by raising: never the zygote's code
                os._exit(1)
            # A fork refused (EAGAIN: the uid's RLIMIT_NPROC; ENOMEM): nothing of this pair stays.
            for fd in fds:
                os.close(fd)
            for end in ends:
                end.close()
            self.discard()
            raise
        for fd in (command_r, result_w, hold_r):
            os.close(fd)
        for end in ends:
            end.close()
        # The trace's key is made after the fork, so no copy of it exists in the candidate
        # process's memory; its trace writer reads it from the pipe before the candidate loads.
        self.trace_key = ""
        if traced:
            self.trace_key = send_key(key_r, key_w)
            send_key(reference_key_r, reference_key_w)

    @staticmethod
    def make_cgroups(parents: dict, name: str) -> tuple:
        """(memory cgroup, pids cgroup holding CANDIDATE_MAX_TASKS, cpuset cgroup) for the
        candidate, each None where not granted; one cgroup for all on v2."""
        made, memory, tasks, cpus = {}, None, None, None
        for controller, parent in parents.items():
            if not parent:
                continue
            try:
                cgroup = made.get(parent) or cgroups.Cgroup(parent, name)
            except OSError:
                continue
            made[parent] = cgroup
            if controller == "memory":
                memory = cgroup
            elif controller == "cpuset":
                cpus = cgroup if cgroup.inherit_cpuset() else None
            elif cgroup.limit_tasks(isolation.CANDIDATE_MAX_TASKS):
                tasks = cgroup
        for cgroup in made.values():
            if all(cgroup is not kept for kept in (memory, tasks, cpus)):
                cgroup.remove()
        return memory, tasks, cpus

    @property
    def cgroups(self) -> list:
        """Each cgroup of the candidate once (on v2 memory, pids and cpuset are one)."""
        found = []
        for cgroup in (self.cgroup, self.tasks_cgroup, self.cpu_cgroup):
            if cgroup is not None and cgroup not in found:
                found.append(cgroup)
        return found

    def limit_memory(self, memory_mb: int) -> str:
        """The kernel's limit on the candidate's cgroup; returns the file the executor's watchdog
        reads its usage from ("": no cgroup)."""
        if self.cgroup is None or memory_mb <= 0 or not self.cgroup.limit(memory_mb):
            return ""
        return self.cgroup.usage_file

    def remove_cgroups(self) -> None:
        """Removes the candidate's cgroups (once nothing of the evaluation is left in them)."""
        for cgroup in self.cgroups:
            if not cgroup.remove():
                print(f"kgym zygote: cgroup {cgroup.path} still busy; left behind", file=sys.stderr)
        self.cgroup = self.tasks_cgroup = self.cpu_cgroup = None

    def hold_to_core(self, core) -> str:
        """The candidate's whole tree held to its timing core by its cpuset cgroup (threads
        and children it starts later too: it cannot leave it); returns the core as granted,
        "" where none is (no core, or no cpuset cgroup)."""
        if core is None or self.cpu_cgroup is None or not self.cpu_cgroup.hold_to_cores(str(core)):
            return ""
        return str(core)

    def limit_private_disk(self, size_mb: int) -> int:
        """Sets the candidate's private disk to the request's limit; returns its size in MiB as
        it now is (0: there is none, only RLIMIT_FSIZE bounds each file)."""
        if not self.private_disk:
            return 0
        if size_mb > 0:
            isolation.resize_private_disk(self.candidate_dir, size_mb)
        disk = os.statvfs(self.candidate_dir)
        return disk.f_blocks * disk.f_frsize >> 20

    @property
    def pids(self) -> set:
        return {self.judge_pid, self.candidate_pid, self.reference_pid}

    def harmed(self) -> str:
        """What is wrong with a prepared pair's processes before its request is handed over (a
        process gone, a zombie, stopped or traced: its /proc/<pid>/stat state), "" if nothing: the running candidate cannot
        reach them (another uid, its own pid namespace), but if anything does, the request it was
        prepared for gets fresh processes instead of paying for it."""
        for role, pid in (("judge", self.judge_pid), ("candidate", self.candidate_pid),
                          ("reference runner", self.reference_pid)):
            state = unfit(pid)
            if state:
                return f"its {role} (pid {pid}) is {state}"
        return ""

    def start(self, command: dict) -> bool:
        try:
            protocol.write_frame(self.command_w, command)
            return True
        except OSError:  # it died while waiting
            return False
        finally:
            os.close(self.command_w)
            self.command_w = -1

    def release_hold(self) -> None:
        if self.hold_w >= 0:
            os.close(self.hold_w)
            self.hold_w = -1

    def discard(self) -> None:
        self.release_hold()
        for fd in (self.command_w, self.result_r):
            if fd >= 0:
                os.close(fd)
        self.command_w = self.result_r = -1
        for pid in self.pids - {0}:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
        self.remove_cgroups()
        if self.private_disk:
            isolation.unmount(self.candidate_dir)  # a fresh pair may mount its own here


def keep_only(sockets: list, others: list, fds: set) -> None:
    """In a forked child of a pair: its own channel `sockets` and `fds` stay open, nothing else
    of the zygote's does (the other processes' ends are let go of first, so their socket
    objects never close a number reused later)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the zygote's own way out (main) is not theirs
    for end in others:
        end.detach()
    isolation.close_fds_except({end.fileno() for end in sockets} | fds)


def send_key(key_r: int, key_w: int) -> str:
    """A fresh trace key into the pipe a trace writer reads it from; its hex for the executor."""
    os.close(key_r)
    key = os.urandom(16)
    os.write(key_w, key)
    os.close(key_w)
    return key.hex()


def warm_cuda(lock_fd: int, seconds: dict) -> None:
    """Starts the CUDA driver (`cuInit`: 0.4 s of a 0.7 s warm-up on an H100 or H200, per
    process, bench/cuda_start.py), then creates the CUDA context and the cuBLAS and cuDNN
    handles holding the lock that keeps these out of the running evaluation's timed region. The
    driver's start makes no context and runs nothing on the GPU, so it goes before the lock:
    the next evaluations' start-ups then fit between two timings (`timing_quiet`). (Compiling a
    Triton kernel under the lock too was tried on an H100: the lock then delayed the running
    evaluation's timing by the compile time, and throughput did not improve.) `seconds`:
    cuda_driver, cuda_wait (for the lock: the running evaluation's timing), cuda_init."""
    import torch
    started = time.perf_counter()
    try:
        ctypes.CDLL("libcuda.so.1").cuInit(0)  # what PyTorch's first call would do; a failure is its to report
    except OSError:  # not found by that name here: PyTorch starts the driver under the lock instead
        pass
    seconds["cuda_driver"] = time.perf_counter() - started
    started = time.perf_counter()
    fcntl.lockf(lock_fd, fcntl.LOCK_SH)
    seconds["cuda_wait"] = time.perf_counter() - started
    started = time.perf_counter()
    try:
        torch.zeros(1, device="cuda")
        torch.ones(8, 8, device="cuda") @ torch.ones(8, 8, device="cuda")  # cuBLAS handle
        torch.nn.functional.conv2d(torch.ones(1, 1, 4, 4, device="cuda"),
                                   torch.ones(1, 1, 3, 3, device="cuda"))  # cuDNN handle
        torch.cuda.synchronize()
    finally:
        fcntl.lockf(lock_fd, fcntl.LOCK_UN)
    seconds["cuda_init"] = time.perf_counter() - started


def timing_cores() -> dict:
    """{"judge", "candidate", "reference"} -> core from KGYM_TIMING_CORES="J,C,R" (set by the
    executor on the GPU: C = R, timing_cores_for), or {}. A launch-bound model's time follows
    its launching thread's core, and cores differ (a virtual machine's share physical ones),
    so the candidate's process and the reference runner share one (README, "Timing cores").
    The candidate's tree is held there (cpuset, where granted) at the lowest priority, the
    reference runner and the judge run at the highest (isolation.TRUSTED_NICE); a pinned
    runner waits for requests without spinning. Each process moves there when its evaluation
    starts; nothing else of the zygote's runs there (main: keep_off), not the next
    evaluation's warm-ups either (that slowed the running evaluation's processes on those
    cores: H100, wall 1.31x the single-process harness)."""
    try:
        cores = [int(part) for part in os.environ.get("KGYM_TIMING_CORES", "").split(",")]
    except ValueError:
        return {}
    return dict(zip(("judge", "candidate", "reference"), cores)) if len(cores) == 3 else {}


def hold_quiet_gpu(lock_fd: int) -> None:
    """Once no warm-up holds the GPU (warm_cuda), keeps new ones waiting until release_gpu
    (or this process's exit): the next evaluations, prepared while this one is timed, start
    their CUDA right after its timing."""
    fcntl.lockf(lock_fd, fcntl.LOCK_EX)


def release_gpu(lock_fd: int) -> None:
    fcntl.lockf(lock_fd, fcntl.LOCK_UN)


def read_command(fd: int):
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return None
        data += chunk
    return json.loads(data)


def log_to(workdir: str) -> None:
    """Standard streams to the process's own log; nothing inherited reaches it."""
    log_fd = os.open(os.path.join(workdir, "sandbox.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.close(log_fd)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    sys.stdout = os.fdopen(1, "w", buffering=1)
    sys.stderr = os.fdopen(2, "w", buffering=1)


def sample_failed_device(result: dict) -> None:
    """The device as the evaluation failed. A candidate that took it and failed mid-call then
    counts as large (device_memory.large: the next pair is made once it is gone). Where kgym's
    own allocation failed (the judge's or the reference runner's), or the candidate's while it
    held less than its share, the candidate's side, still alive beside them, is asked what it
    holds now: beyond its share, the shortage is its doing."""
    from . import device_memory, failures
    try:
        device_memory.Peak("cuda", result).sample()
        # Not for a failed confinement or warm-up: no candidate code ran yet, and what is on the
        # device then may be the last evaluation's, still exiting.
        code_ran = not failures.harmed_warm_up(result.get("message", ""))
        exhausted, held = device_memory.candidate_exhausted() if result.get("own_device_memory_exhausted") and \
            code_ran else (False, "")
    except BaseException:  # this process has no working CUDA context (its warm-up failed)
        return
    if not exhausted:
        return
    message, evidence = device_memory.exhausted_account(held, result.get("message", ""))
    result.update(verdict="RESOURCE_LIMIT", own_device_memory_exhausted=False, message=message)
    result.setdefault("evidence", []).append(evidence)


def judge_main(workdir: str, command_fd: int, result_fd: int, judge_end, reference_end, device: str,
               lock_fd: int) -> None:
    """In the forked judge: confine, warm up, wait for the request, evaluate against the
    candidate process (timing the reference runner the same way), send the one result, exit
    without cleanup."""
    from . import evaluate, remote_candidate
    log_to(workdir)
    seconds, granted, confine_error = {}, [], None
    try:
        started = time.perf_counter()
        granted, workdir = isolation.confine(workdir, isolation.JUDGE_UID, Laps(seconds),
                                             trusted_priority=device == "cuda" and bool(timing_cores()))
        seconds["confine"] = time.perf_counter() - started
        if device == "cuda":
            warm_cuda(lock_fd, seconds)
    except BaseException as exc:  # reported once the request arrives; never run half-confined
        confine_error = exc
    command = read_command(command_fd)
    if command is None:
        os._exit(0)
    if device == "cuda":  # only now: warming up there would slow the running evaluation's judge
        isolation.pin_to_core(timing_cores().get("judge"))
    request = command["request"]
    if device == "cuda":
        from . import device_memory
        device_memory.kgym_pids = {int(pid) for pid in command.get("kgym_pids", [])}
        device_memory.exiting_pids = {int(pid) for pid in command.get("exiting_pids", [])}
    seconds.update({str(k): float(v) for k, v in command.get("setup_seconds", {}).items()})
    result = {"request_id": request.get("request_id", ""), "task_id": request.get("task", {}).get("id", ""),
              "candidate_id": request.get("candidate", {}).get("id", ""), "harness_seconds": seconds}

    def phase(name):
        protocol.write_frame(result_fd, frames.phase_event(name))

    candidate = remote_candidate.RemoteCandidate(channel.Channel(judge_end, spin=device == "cuda"), device,
                                                 request.get("candidate", {}).get("source", ""),
                                                 bool(command.get("traced")),
                                                 int(request.get("options", {}).get("memory_limit_mb") or 4096))
    reference = remote_candidate.RemoteCandidate(channel.Channel(reference_end, spin=device == "cuda"), device,
                                                 evaluate.reference_runner_source(request.get("task", {})),
                                                 traced=False, trusted=True)
    try:
        if confine_error is not None:
            raise evaluate.Failure("INTERNAL_ERROR", "confine", f"judge confinement failed: {confine_error!r}",
                                   own_memory=device == "cuda")  # failures.harmed_warm_up
        result["isolation"] = ["judge:" + g for g in granted]
        result["device_name"] = platform.processor() or "cpu"
        if device == "cuda":
            import torch
            result["device_name"] = torch.cuda.get_device_name()
        evaluate.evaluate(request, workdir, candidate, phase, result, lambda: hold_quiet_gpu(lock_fd),
                          timed_reference=reference, gpu_done=lambda: release_gpu(lock_fd),
                          timing_planned=lambda small: protocol.write_frame(result_fd, {"prepare_next": small}))
    except evaluate.Failure as failure:
        result.update(verdict=failure.verdict, failed_phase=frames.phase_value(failure.phase), message=failure.message,
                      evidence=failure.evidence)
        if failure.own_memory:
            result["own_device_memory_exhausted"] = True
    except BaseException as exc:  # the harness itself broke: say so, do not blame the candidate
        failure = evaluate.failure_from(exc, "harness", "evaluation failed")
        result.update(verdict="INTERNAL_ERROR", failed_phase=frames.phase_value("harness"), message=failure.message)
        if device == "cuda" and evaluate.failures.out_of_device_memory(failure.message):
            result["own_device_memory_exhausted"] = True
    if device == "cuda" and result.get("verdict", "OK") != "OK":
        sample_failed_device(result)
    result["isolation"] = result.get("isolation", []) + ["candidate:" + g for g in candidate.isolation]
    for side, prefix in ((candidate, "candidate_"), (reference, "reference_")):  # their own reports
        seconds.update({prefix + k: v for k, v in side.reported_seconds.items()})
    try:
        protocol.write_frame(result_fd, frames.result_event(result))
    finally:
        sys.stdout.flush()
        os._exit(0)


def runner_main(role: str, workdir: str, end, recorder, device: str, lock_fd: int, key_fd: int,
                bindings: dict, uid: int, hold_fd: int = -1) -> None:
    """In a forked runner: the candidate process (`role` "candidate": a candidate uid, the
    candidate's limits, ModelNew) or the reference runner ("reference": the judge's uid, which
    the candidate cannot reach, no limits, the task's Model), served alike so the judge times
    both the same way: confine (own uid, namespaces, private tmp), start the trace, warm up,
    then answer the judge until it says finish or goes away."""
    from . import candidate_runner
    log_to(workdir)
    granted, confine_error, confine_seconds = [], None, {}
    try:
        if key_fd >= 0:
            tracing.preload(device)
        started = time.perf_counter()
        granted, workdir = isolation.confine(workdir, uid, Laps(confine_seconds), trusted_priority=(
            role == "reference" and device == "cuda" and bool(timing_cores())))
        confine_seconds["confine"] = time.perf_counter() - started
        if key_fd >= 0:
            tracing.start(workdir, key_fd, device)
        if device == "cuda":
            warm_cuda(lock_fd, {})  # on any core: the timing cores are the running evaluation's
    except BaseException as exc:
        confine_error = exc
    os.close(lock_fd)  # no code served here holds the lock other evaluations wait on
    spin = device == "cuda" and not timing_cores()
    runner = candidate_runner.Runner(channel.Channel(end, spin=spin), workdir, device, recorder,
                                     tracing.Tracer(device), bindings, limited=role == "candidate")
    runner.granted, runner.confine_error, runner.confine_seconds = granted, confine_error, confine_seconds
    runner.core = timing_cores().get(role) if device == "cuda" else None  # taken at the first request
    candidate_runner.serve(runner)
    sys.stdout.flush()
    if hold_fd >= 0:
        try:
            os.read(hold_fd, 1)  # until the zygote has the result (Pair: hold)
        except OSError:
            pass
    os._exit(0)


def exit_status(status: int) -> tuple:
    """(exit code, signal) of a wait status; (0, 0) when there is none."""
    if status is None:
        return 0, 0
    return (os.WEXITSTATUS(status) if os.WIFEXITED(status) else 0,
            os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0)


def reap(pid: int, grace_s: float):
    """The wait status of a child, killing it (and its process group) after `grace_s`."""
    deadline = time.monotonic() + grace_s
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.monotonic() > deadline:
            for target in (-pid, pid):
                try:
                    os.kill(target, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            return os.waitpid(pid, 0)[1]
        time.sleep(0.005)


class ExecutorGone(Exception):
    """kgym is gone (it stopped or was killed: its end of the command pipe closed, or the
    parent-death signal, SIGTERM, came): nobody holds the evaluation's deadlines any more, so
    nothing of it may go on running."""


def raise_executor_gone(signum, frame):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: the way out must not be cut short (seen twice)
    raise ExecutorGone()


def executor_gone(fd: int = 0) -> bool:
    """Whether the executor's end of the command pipe (stdin) closed; a command waiting there
    is not read."""
    poller = select.poll()
    poller.register(fd, 0)  # hang-ups and errors are reported whatever is asked
    return any(events & (select.POLLHUP | select.POLLERR) for _, events in poller.poll(0))


def relay(pair: Pair, out_fd: int, keep: set, exiting, prepare_next=lambda: set(), gpu_watch=None) -> dict:
    """Forwards the judge's phase frames and its one result (preparing the next evaluations,
    `prepare_next`, which returns every standby's pids, when the judge says its timing starts
    and leaves room), then reports the evaluation's exit once the candidate process is killed
    or gone (its trace complete, none of its code running again; one that answered goes to
    `exiting`, an Exiting) and whatever it left is swept. Nothing of the candidate process
    reaches the executor but its exit. The judge and the reference runner (kgym's own;
    nothing of the candidate's runs there) may still be exiting then: a CUDA context takes
    ~0.1 s to go (H100), and they go while the executor reads the trace. Returns the judge's
    result, if any."""
    # Candidates with uids of their own (root): their tasks never count against our forks.
    own_uids = isolation.switches_uids()
    if gpu_watch is not None:
        keep = keep | {gpu_watch.pid}  # the zygote's own, never swept
    reader = protocol.FrameReader(pair.result_r)
    relayed, status, drain_until, result = 0, None, None, None
    on_gpu, next_look = {}, time.monotonic()  # the candidate's processes but its own seen on a GPU
    watched = set()  # how the looks looked ("nvml", "descriptors"): the isolation fact

    def look_at_gpu() -> None:
        if gpu_watch is not None:
            how, seen = gpu_watch.look(pair.candidate_pid, keep | pair.pids)
            watched.add(how)
            on_gpu.update(seen)

    while result is None:
        ready, _, _ = select.select([pair.result_r], [], [], 0.05)
        if executor_gone():  # an endless candidate would otherwise spin on for good (RLIMIT_CPU)
            raise ExecutorGone()
        if time.monotonic() >= next_look:
            look_at_gpu()
            next_look = time.monotonic() + gpu_processes.Watch.INTERVAL_S
        lines = reader.read_available() if ready else []
        for line in lines or []:
            relayed += len(line)
            if relayed > MAX_RELAY_BYTES:
                break
            try:
                frame = json.loads(line)
            except ValueError:
                continue
            if frame == {"prepare_next": True}:  # the judge's word to us, not the executor's: the next
                if own_uids:  # evaluations' processes, forked now, are not its leftovers
                    keep = keep | prepare_next()  # (sharing our uid, the candidate could make our forks fail)
                continue
            if isinstance(frame, dict) and len(frame) == 1 and next(iter(frame)) in ("phase", "result"):
                try:
                    protocol.write_frame(out_fd, frame)
                except BrokenPipeError:
                    raise ExecutorGone() from None
                if "result" in frame:  # the judge's last word: it exits now
                    result = frame["result"] if isinstance(frame["result"], dict) else {}
                    break
        if status is None:
            done, status_word = os.waitpid(pair.judge_pid, os.WNOHANG)
            if done:
                status, drain_until = status_word, time.monotonic() + 0.5
        if status is not None and (lines is None or not ready or time.monotonic() > drain_until):
            break
    os.close(pair.result_r)
    look_at_gpu()  # once more, before anything of the candidate's is killed
    laps = Laps({})
    # What the candidate left running, counted while its process waits on the hold (in a pid
    # namespace of its own they go with it, else the sweep below kills them).
    left = len(descendants(pair.candidate_pid, keep))
    out_of_memory = pair.cgroup is not None and pair.cgroup.out_of_memory()
    if result is not None and result.get("verdict") != "CRASHED" and own_uids:
        # It answered and its trace is finished: its whole tree is killed now and collected
        # later, so its exit (its CUDA context's teardown, 0.15 s a KernelBench evaluation on an
        # H100) overlaps the next evaluation instead of delaying this answer. Only where it has
        # a uid of its own: sharing ours (unprivileged), its dying tasks would still count
        # against RLIMIT_NPROC when we fork the next evaluation's processes.
        kill_tree(pair.candidate_pid, keep)
        pair.release_hold()
        candidate_status = None
        exiting.add({pair.candidate_pid}, then=pair.remove_cgroups)
    else:
        # It crashed (its exit status says how) or the judge did not answer: it is gone or ends
        # when the judge's end of its channel closes; one that does not is killed.
        pair.release_hold()
        candidate_status = reap(pair.candidate_pid, 1.0)
    laps("exit_candidate")
    swept = max(sweep(keep | pair.pids), left)
    if candidate_status is not None:
        pair.remove_cgroups()
    laps("exit_sweep")
    code, sig = exit_status(status)
    candidate_code, candidate_sig = exit_status(candidate_status)
    frames.write_event(out_fd, exit={"pid": pair.judge_pid, "exit_code": code, "signal": sig, "swept": swept,
                                     "trace_key": pair.trace_key, "candidate_exit_code": candidate_code,
                                     "candidate_signal": candidate_sig, "seconds": laps.seconds,
                                     "candidate_out_of_memory": out_of_memory,
                                     "other_gpu_processes": [on_gpu[pid] for pid in sorted(on_gpu)],
                                     "gpu_watch": "nvml" if "nvml" in watched else "".join(watched)})
    return result


def begin(pair: Pair, evaluation: dict, exiting_pids: set = frozenset()):
    """Sets the prepared candidate's limits to its request's, hands it the built extensions,
    then starts the evaluation; returns what the executor is told of the limits, or None if
    the prepared judge had died."""
    from . import extension_build
    options = evaluation["request"].get("options", {})
    started = time.perf_counter()
    limits = {"memory_usage_file": pair.limit_memory(int(options.get("memory_limit_mb") or 0)),
              "disk_limit_mb": pair.limit_private_disk(int(options.get("disk_limit_mb") or 0)),
              "candidate_dir": isolation.seen_from_host(pair.candidate_dir),
              "tasks_limit": isolation.CANDIDATE_MAX_TASKS if pair.tasks_cgroup is not None else 0,
              # no pids cgroup: the executor counts the candidate's pid namespace instead (a backstop
              # where RLIMIT_NPROC holds it in a user namespace of its own: isolation.own_tasks_namespace)
              "polled_tasks_limit": pair.candidate_tasks if pair.tasks_cgroup is None else 0,
              # before its code exists: held to the timing core it shares with the reference runner
              "cpuset": pair.hold_to_core(timing_cores().get("candidate"))}
    pair.seconds["begin_limits"] = time.perf_counter() - started
    if evaluation.get("extension_keys"):
        extension_build.copy_built(evaluation["extension_cache"], evaluation["extension_keys"], pair.candidate_dir)
    # kgym's processes on the device besides the judge, for the judge's count of the candidate's side
    kgym_pids = sorted(set(exiting_pids) | {pair.reference_pid})
    return limits if pair.start({"request": evaluation["request"], "traced": pair.traced,
                                 "kgym_pids": kgym_pids, "exiting_pids": sorted(exiting_pids),
                                 "setup_seconds": pair.seconds}) else None


class Exiting:
    """Processes of finished evaluations that may still be exiting (the judge and the reference
    runner, kgym's own; the candidate's process, killed), reaped before the next evaluation
    needs their GPU memory back."""

    def __init__(self):
        self.pids = set()
        self.then = {}  # pid -> what is done once it is collected (a killed candidate's cgroups go)

    def add(self, pids, then=None) -> None:
        self.pids |= set(pids)
        if then is not None:
            self.then.update((pid, then) for pid in pids)

    def reap(self, wait: bool, pids: set = None) -> None:
        """Collects those gone (of `pids`, default all); `wait`: every one, killing any still
        there after 5 s."""
        for pid in list(self.pids if pids is None else pids):
            try:
                done = reap(pid, 5.0) if wait else os.waitpid(pid, os.WNOHANG)[0]
            except ChildProcessError:
                done = True
            if done or wait:
                self.pids.discard(pid)
                then = self.then.pop(pid, None)
                if then is not None:
                    then()


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
    parser.add_argument("--no-memory-cgroup", action="store_true",
                        help="no cgroup per candidate (the executor then counts the candidate's uid)")
    parser.add_argument("--no-nvml-watch", action="store_true",
                        help="the GPU watch reads the candidate's processes' descriptors, not NVML's "
                             "listing (as where NVML is missing or blind)")
    parser.add_argument("--prepare", action="append", default=[], metavar="WORKDIR",
                        help="prepare an evaluation's processes there at once, before any request "
                             "(the executor's first Evaluates name these directories)")
    args = parser.parse_args()
    # Unprivileged, a user namespace of our own lets every candidate have a pid namespace of
    # its own (it can then signal, trace and see no other process of our uid); first, while
    # this process has one thread.
    isolation.own_user_namespace()
    if args.device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    out_fd = os.dup(1)  # frames go here; whatever else prints goes to stderr
    os.dup2(2, 1)
    started = time.perf_counter()
    import torch
    # What torch.utils.cpp_extension imports (extensions.install_loader's), without it: the
    # module itself asks torch.cuda.is_available(), which initialises CUDA here, and forks could
    # not use CUDA after that. Imported in every process, setuptools took 0.4 s on an H100.
    import setuptools.command.build_ext  # noqa: F401
    import triton
    from . import (candidate_runner, compare, cost_model, device_memory, evaluate, integrity,  # noqa: F401  (before fork)
                   extension_build, launches, remote_candidate, timing, tracing)
    recorder = launches.install(interpreted=args.device == "cpu")
    if args.device == "cpu":
        warm_up_cpu()
    ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    frames.write_event(out_fd, ready={"python": platform.python_version(), "torch": torch.__version__,
                                      "triton": triton.__version__, "import_s": time.perf_counter() - started})
    lock_fd, lock_path = tempfile.mkstemp(prefix="kgym-gpu-lock-")
    os.unlink(lock_path)  # children keep the open file; nobody else can reach it
    bindings = integrity.bindings(integrity.harness_modules())  # before any candidate exists
    cgroup_parents = {"memory": None if args.no_memory_cgroup else cgroups.find_parent("memory"),
                      "pids": cgroups.find_parent("pids"),
                      "cpuset": cgroups.find_parent("cpuset") if args.device == "cuda" and timing_cores() else None}
    if args.device == "cuda":
        isolation.keep_off(set(timing_cores().values()))  # this zygote, and every process it forks
    pid_namespaces = isolation.PidNamespaces()
    gpu_watch = None if args.device != "cuda" else gpu_processes.Watch() if args.no_nvml_watch \
        else gpu_processes.Watch.start()
    standbys, exiting, wait_for_exits = {}, Exiting(), False  # standbys: workdir -> Pair

    def prepare(workdir: str, current: Pair = None, attempts: int = FORK_ATTEMPTS) -> Pair:
        """A pair for `workdir`. A refused fork (EAGAIN, ENOMEM: unprivileged, the uid's
        RLIMIT_NPROC counts the exiting evaluations' tasks too) is tried again after the exiting
        processes are collected, `attempts` times in all, before it ends the zygote."""
        taken = {pair.candidate_uid for pair in [*standbys.values(), current] if pair is not None}
        uid = next(uid for uid in isolation.CANDIDATE_UIDS if uid not in taken)
        for attempt in range(1, attempts + 1):
            try:
                isolation.hold_next_candidate_tasks()  # unprivileged: within what kgym's uid has left
                return Pair(workdir, args.device, recorder, lock_fd, out_fd, bindings, uid, cgroup_parents,
                            pid_namespaces)
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.ENOMEM) or attempt == attempts:
                    raise
                print(f"kgym zygote: a fork for {workdir} was refused ({exc}); trying again ({attempt + 1} of "
                      f"{attempts})", file=sys.stderr, flush=True)
                exiting.reap(wait=False)
                time.sleep(0.2 * attempt)

    def prepare_ahead(workdir: str, current: Pair) -> bool:
        """A standby for `workdir`, once: one that cannot be made now is made when its request comes."""
        try:
            standbys[workdir] = prepare(workdir, current, attempts=1)
            return True
        except OSError as exc:
            print(f"kgym zygote: {workdir} not prepared ahead: {exc}", file=sys.stderr, flush=True)
            return False

    def standby_pids() -> set:
        return set().union(*(pair.pids for pair in standbys.values()))

    for workdir in args.prepare[:len(isolation.CANDIDATE_UIDS) - 1]:  # as many as an evaluation's upcoming
        if not prepare_ahead(workdir, None):
            break
    running = None  # the pair whose evaluation is under way, until its result is relayed
    signal.signal(signal.SIGTERM, raise_executor_gone)  # kgym's parent-death signal
    try:
        for line in sys.stdin:
            command = frames.command(line)
            if "shutdown" in command:
                break
            evaluation = command["evaluate"]
            upcoming = list(evaluation.get("next_workdirs", []))[:len(isolation.CANDIDATE_UIDS) - 1]
            for workdir in [w for w in standbys if w != evaluation["workdir"] and w not in upcoming]:
                standbys.pop(workdir).discard()
            # After an evaluation that took most of the GPU, the next one starts once its processes
            # are gone and their memory with them (device_memory.large).
            # A standby prepared while the last evaluation held most of the GPU may have failed to
            # warm up for that: its judge or runners then say so at the request, and the executor
            # evaluates again in fresh processes (failures.harmed_warm_up). Cheaper than making a
            # fresh pair after every large evaluation (KernelBench level 1 has many).
            exiting.reap(wait=wait_for_exits)
            # Every standby, not only this request's: one stopped while it warmed up CUDA holds
            # the warm-up lock, and this evaluation's timing would wait for it (hold_quiet_gpu).
            for workdir, pair in list(standbys.items()):
                harm = pair.harmed()
                if harm:
                    print(f"kgym zygote: the evaluation prepared in {workdir} was harmed ({harm}); "
                          "its request gets fresh processes", file=sys.stderr, flush=True)
                    standbys.pop(workdir).discard()
            harm = gpu_watch.harmed() if gpu_watch is not None else ""
            if harm:
                print(f"kgym zygote: the GPU watch was harmed ({harm}); a new one watches", file=sys.stderr,
                      flush=True)
                gpu_watch = gpu_watch.renewed()
            running = current = standbys.pop(evaluation["workdir"], None) or prepare(evaluation["workdir"])
            started = begin(current, evaluation, exiting.pids)
            if started is None:
                current.discard()  # the prepared judge died: make a fresh pair
                running = current = prepare(evaluation["workdir"])
                started = begin(current, evaluation, exiting.pids) or {}
            frames.write_event(out_fd, started={"pid": current.judge_pid, "candidate_pid": current.candidate_pid,
                                                **started})
            if upcoming and upcoming[0] not in standbys:  # the next one is due soon: warm it up now
                prepare_ahead(upcoming[0], current)
            older = set(exiting.pids)  # exiting since before this evaluation: gone by now
            exiting.add(current.pids - {current.candidate_pid})
            def prepare_upcoming() -> set:
                """The evaluations after this one, not with its candidate's uid (it may still be
                exiting); prepared while it is timed, they start CUDA once its timing is done
                (hold_quiet_gpu). Returns every standby's pids."""
                for workdir in upcoming:
                    if workdir not in standbys and not prepare_ahead(workdir, current):
                        break
                return standby_pids()

            result = relay(current, out_fd, standby_pids() | exiting.pids, exiting, prepare_upcoming, gpu_watch)
            running = None
            wait_for_exits = device_memory.large(result or {})
            exiting.reap(wait=True, pids=older)
            # Those not prepared while it was timed (on the CPU, or it ended before its timing)
            # warm up now, before the next one's timing: a CUDA start-up that overlaps a timing
            # makes that timing wait for it (lock_fd). Not after a large evaluation, whose memory
            # is not back yet.
            if not wait_for_exits:
                prepare_upcoming()
    except (ExecutorGone, BrokenPipeError):  # a frame kgym is no longer there to read
        if running is not None:
            running.discard()
    for pair in standbys.values():
        pair.discard()
    exiting.reap(wait=True)
    if gpu_watch is not None:
        gpu_watch.stop()


if __name__ == "__main__":
    main()
