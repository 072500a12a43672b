"""Processes of the candidate's, other than its own process, that use the GPU.

The candidate's process is traced (CUPTI), so its GPU work outside its timed requests is
seen. A process it starts is not, once it leaves the injection library out of its
environment: with a CUDA context of its own it could fill, after the judge's clock stopped,
output buffers the candidate's process shared with it by CUDA IPC (hostile works_in_helper),
or load the GPU while the reference is timed. The zygote looks at the GPU's processes (NVML)
while each evaluation runs; any of the candidate's but its own process ends it HACKED
(EvidenceKind GPU_PROCESS_OUTSIDE_TRACE). A candidate has no use for a second context.
Where NVML is missing or blind (its pids from another namespace, as in a container without
the host's), the zygote looks at the candidate's processes instead: one that opened a GPU's
device node itself (a context opens /dev/nvidiactl and its GPU's node; a child forked by the
candidate only shares the candidate's) or hides its descriptors counts the same. The trace
also records the candidate's process handing device memory to another (DEVICE_MEMORY_SHARED).
"""
import ctypes
import json
import os
import select
import signal
import time

from . import proc_tree
from .isolation import close_fds_except

PR_SET_PDEATHSIG = 1


def others_on_gpu(gpu_pids, candidate_pid: int, belongs) -> list:
    """The pids among `gpu_pids` (processes holding a CUDA context) that are the candidate's
    (`belongs(pid)`), its own traced process aside; sorted."""
    return sorted(pid for pid in set(gpu_pids) if pid != candidate_pid and belongs(pid))


def descends_from(pid: int, root: int, parent_of, max_depth: int = 64) -> bool:
    """Whether `root` is among `pid`'s ancestors (`parent_of(pid)` -> its parent, 0 if none)."""
    for _ in range(max_depth):
        pid = parent_of(pid)
        if pid <= 0:
            return False
        if pid == root:
            return True
    return False


def _pid_namespace(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return ""


def belongs_to(candidate_pid: int, known_pids: set, parent_of=proc_tree.parent):
    """A test for pids: the candidate's process tree, where a process it started may have
    left it (an orphan goes to the init of its pid namespace, the candidate's process where
    it has a namespace of its own, else to the zygote, the subreaper): a descendant, a process
    in the candidate's own pid namespace, or a child of the zygote's that is none of kgym's
    (`known_pids`: every pair's and exiting process). `parent_of`: pid -> its parent."""
    namespace = _pid_namespace(candidate_pid)
    own_namespace = bool(namespace) and namespace != _pid_namespace(os.getpid())
    zygote = os.getpid()

    def belongs(pid: int) -> bool:
        return (descends_from(pid, candidate_pid, parent_of)
                or (own_namespace and _pid_namespace(pid) == namespace)
                or (parent_of(pid) == zygote and pid not in known_pids))
    return belongs


DEVICE_NODES = "/dev/nvidia"  # what a CUDA context holds open
SYS_KCMP, KCMP_FILE = 312, 0  # x86_64
_libc = ctypes.CDLL(None, use_errno=True)


def device_fds(pid: int, prefix: str = DEVICE_NODES):
    """The descriptors of `pid` open on a file under `prefix`; None where they cannot be read
    (not dumpable: hidden)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except FileNotFoundError:
        return []
    except OSError:
        return None
    found = []
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith(prefix):
                found.append(int(fd))
        except OSError:
            continue
    return found


def same_open_file(pid_a: int, fd_a: int, pid_b: int, fd_b: int):
    """Whether two processes' descriptors are one open file (one shared by fork); None where
    the kernel will not say (kcmp refused or missing)."""
    answer = _libc.syscall(SYS_KCMP, pid_a, pid_b, KCMP_FILE, fd_a, fd_b)
    return None if answer < 0 else answer == 0


def opened_device_itself(own: list, theirs: list, pid: int, candidate_pid: int) -> bool:
    """Whether `pid`, holding the device descriptors `own` (device_fds), opened a device node
    itself, not only ones it shares with the candidate's process (`theirs`) by a fork (a forked
    child cannot use CUDA; an exec'd one opens its own to make a context). True where its
    descriptors are hidden (`own` None); False where the kernel will not compare them."""
    if own is None:
        return True
    for fd in own:
        shared = False
        for their_fd in theirs:
            same = same_open_file(pid, fd, candidate_pid, their_fd)
            if same is None:
                return False
            if same:
                shared = True
                break
        if not shared:
            return True
    return False


def device_holders(candidate_pid: int, known_pids: set, prefix: str = DEVICE_NODES) -> dict:
    """pid -> description of each of the candidate's processes but its own (belongs_to) that
    opened a device node itself or hides its descriptors: NVML's listing by other means. One
    pass over /proc for the tree, the candidate's descriptors read once."""
    parents = proc_tree.parents()
    belongs = belongs_to(candidate_pid, known_pids, lambda pid: parents.get(pid, 0))
    theirs = device_fds(candidate_pid, prefix) or []
    found = {}
    for pid in parents:
        if pid == candidate_pid or pid in known_pids or not belongs(pid):
            continue
        own = device_fds(pid, prefix)
        if opened_device_itself(own, theirs, pid, candidate_pid):
            found[pid] = describe(pid) + (" [its descriptors hidden]" if own is None else "")
    return found


def describe(pid: int) -> str:
    """"pid (command)" for the evidence."""
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f"{pid} ({f.read().strip()})"
    except OSError:
        return str(pid)


class Watch:
    """NVML's view of the GPUs' processes, from a process of its own forked by the zygote (the
    zygote forks every evaluation's processes: NVML's state must not be in them, and the judge
    starts NVML afresh in its own). Asked over a pipe; it goes when the zygote goes (its end of
    the pipe closes, or the parent-death signal). Without NVML (pid -1) or where its listing is
    blind, the candidate's processes' descriptors. A watch that stops answering (stopped or
    killed by whatever reached kgym's uid: no candidate can) costs one look by descriptors and
    is replaced before the next evaluation (renewed), never a hung zygote."""

    INTERVAL_S = 0.2  # a context takes longer than this to come up (about 0.1-0.3 s on an H100)
    ANSWER_S = 1.0  # an NVML listing takes milliseconds
    READY_S = 30.0  # NVML's start, on a busy machine

    def __init__(self, pid: int = -1, to_fd: int = -1, from_fd: int = -1, serve=None):
        self.pid, self.to_fd, self.from_fd, self.serve = pid, to_fd, from_fd, serve
        self.broken = False  # it did not answer in time: replaced before the next evaluation

    @staticmethod
    def start(serve=None):
        """A Watch; one without NVML's process where NVML is missing. `serve(ask_fd,
        answer_fd)`: the watch process's work (_serve; a test's scripted listing)."""
        serve = serve or _serve
        ask_r, ask_w = os.pipe()
        answer_r, answer_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            close_fds_except({ask_r, answer_w})  # nothing of the zygote's: its channel, its commands
            os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
            ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            try:
                serve(ask_r, answer_w)
            finally:
                os._exit(0)
        os.close(ask_r)
        os.close(answer_w)
        watch = Watch(pid, ask_w, answer_r, serve)
        if read_line(answer_r, Watch.READY_S) != "ready":
            watch.stop()
            return Watch()
        return watch

    def gpu_pids(self) -> set:
        if self.pid < 0 or self.broken:
            return set()
        try:
            os.write(self.to_fd, b"?")
            answer = read_line(self.from_fd, self.ANSWER_S)
            if answer is not None:
                return set(json.loads(answer or "[]"))
        except (OSError, ValueError):
            pass
        self.broken = True
        return set()

    def look(self, candidate_pid: int, kgym_pids: set):
        """(how it looked: "nvml" or "descriptors", pid -> description of each of the
        candidate's processes but its own on a GPU now); `kgym_pids`: kgym's, every pair's and
        exiting process. By descriptors where there is no NVML, its process does not answer or
        its pids are not this process's (a pid namespace it does not map: then not even kgym's
        own processes are among them)."""
        kgym_pids = set(kgym_pids)
        known = kgym_pids | ({self.pid} if self.pid > 0 else set())
        pids = self.gpu_pids()
        if not pids & (kgym_pids | {candidate_pid}):
            return "descriptors", device_holders(candidate_pid, known)
        belongs = belongs_to(candidate_pid, known)
        return "nvml", {pid: describe(pid) for pid in others_on_gpu(pids - kgym_pids, candidate_pid, belongs)}

    def harmed(self) -> str:
        """What is wrong with the watch's process ("" if nothing or it has none): it did not
        answer, or it is gone, a zombie, stopped or traced."""
        if self.pid < 0:
            return ""
        if self.broken:
            return f"its process (pid {self.pid}) did not answer within {self.ANSWER_S:g} s"
        state = proc_tree.unfit(self.pid)
        return f"its process (pid {self.pid}) is {state}" if state else ""

    def renewed(self):
        """This watch, or a new one (this one's process killed and collected) where it is harmed."""
        if not self.harmed():
            return self
        self.stop()
        return Watch.start(self.serve)

    def stop(self) -> None:
        if self.pid < 0:
            return
        os.close(self.to_fd)
        os.close(self.from_fd)
        try:
            os.kill(self.pid, signal.SIGKILL)  # stopped, it would never read the closed pipe
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)
        self.pid = -1


def read_line(fd: int, timeout_s: float):
    """One line from a pipe the other end writes a line at a time, without its newline; None
    where none came within `timeout_s` or the pipe closed first."""
    data, deadline = b"", time.monotonic() + timeout_s
    while not data.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, 4096)
        if not chunk:
            return None
        data += chunk
    return data.decode().strip()


def _serve(ask_fd: int, answer_fd: int) -> None:
    """The watch's process: "ready" (or "none" without NVML), then a JSON list of the pids
    holding a context on any GPU for each byte asked."""
    try:
        import pynvml
        pynvml.nvmlInit()
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
    except Exception:  # noqa: BLE001  (no NVML library or driver)
        os.write(answer_fd, b"none\n")
        return
    os.write(answer_fd, b"ready\n")
    while os.read(ask_fd, 1):
        pids = set()
        for handle in handles:
            for listing in (pynvml.nvmlDeviceGetComputeRunningProcesses, pynvml.nvmlDeviceGetGraphicsRunningProcesses):
                try:
                    pids |= {p.pid for p in listing(handle)}
                except pynvml.NVMLError:
                    pass
        os.write(answer_fd, (json.dumps(sorted(pids)) + "\n").encode())
