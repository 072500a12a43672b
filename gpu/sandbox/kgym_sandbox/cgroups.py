"""A memory cgroup for each candidate process, where the machine grants one (root, a writable
cgroup v1 memory hierarchy or a cgroup v2 one with the memory controller delegated), and a
pids cgroup likewise (v1: its own hierarchy; v2: the same cgroup).

A process's resident memory misses what a candidate can hold elsewhere: children that left
its session (setsid, double fork) and files in memory (memfd, tmpfs, shared memory). A cgroup
counts all of it, wherever the processes went, and the kernel enforces its limit. The zygote
moves the candidate process in right after the fork, before its code exists; the executor's
watchdog reads the usage (ExecResult.isolation: candidate:memory_cgroup). The pids limit
bounds the tasks (processes and threads) of the candidate's whole tree, wherever they went;
RLIMIT_NPROC counts per uid, and a uid such as nobody may be shared with the machine's own
services (candidate:pids_cgroup=N). On the GPU a cpuset (v1: its own hierarchy; v2: the same
cgroup) holds the candidate's whole tree to the timing core it shares with the reference
runner (candidate:cpuset=N): no thread of its own reaches the judge's core or any other.
"""
import errno
import os
import signal
import sys
import time

from . import isolation

V1_USAGE, V2_USAGE = "memory.usage_in_bytes", "memory.current"
LEAF = "kgym-processes"


def _own_cgroups() -> dict:
    """Controller ("memory", or "" for v2's unified hierarchy) -> this process's cgroup path."""
    found = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for controller in controllers.split(",") if controllers else [""]:
                found[controller] = path
    return found


def _under(mount_root: str, mount_point: str, path: str) -> str:
    """Where the cgroup `path` is in the filesystem, through a mount of `mount_root`."""
    if mount_root != "/" and path.startswith(mount_root):
        path = path[len(mount_root):]
    return os.path.join(mount_point, path.lstrip("/"))


def _writable_dir(path: str) -> bool:
    probe = os.path.join(path, f"kgym-probe-{os.getpid()}")
    try:
        os.mkdir(probe)
        os.rmdir(probe)
        return True
    except OSError:
        return False


def _enable(path: str, controller: str) -> None:
    with open(os.path.join(path, "cgroup.subtree_control"), "w") as f:
        f.write("+" + controller)


def _v2_delegated(path: str, controller: str = "memory") -> bool:
    """Whether children of `path` get `controller`, enabling it if we may. v2 lets a
    cgroup hand controllers to its children only while it holds no process itself, so where
    kgym's own cgroup holds processes (a container's, typically) they move into a leaf
    child of it, LEAF: still under the same cgroup and its limits."""
    try:
        with open(os.path.join(path, "cgroup.subtree_control")) as f:
            if controller in f.read().split():
                return True
        with open(os.path.join(path, "cgroup.controllers")) as f:
            if controller not in f.read().split():
                return False
    except OSError:
        return False
    try:
        _enable(path, controller)
        return True
    except OSError as exc:
        if exc.errno != errno.EBUSY:  # not ours to change
            return False
    try:
        os.makedirs(os.path.join(path, LEAF), exist_ok=True)
        with open(os.path.join(path, "cgroup.procs")) as f:
            pids = f.read().split()
        for pid in pids:
            try:
                with open(os.path.join(path, LEAF, "cgroup.procs"), "w") as f:
                    f.write(pid)
            except OSError:
                pass  # gone meanwhile
        _enable(path, controller)
        print(f"kgym zygote: moved {len(pids)} processes of {path} into {LEAF} to delegate its {controller} controller",
              file=sys.stderr)
        return True
    except OSError:
        return False


def find_parent(controller: str = "memory"):
    """(directory under which candidate cgroups with `controller` are made, "v1" | "v2"), or
    None where the machine grants none."""
    if os.geteuid() != 0:
        return None
    try:
        mounts, own = isolation.mounts(), _own_cgroups()
    except (OSError, ValueError, IndexError):
        return None
    for m in mounts:
        if m.fstype == "cgroup" and controller in m.super_options and controller in own:
            path = _under(m.root, m.point, own[controller])
            if _writable_dir(path):
                return path, "v1"
    for m in mounts:
        if m.fstype == "cgroup2" and "" in own:
            path = _under(m.root, m.point, own[""])
            if os.path.basename(path) == LEAF and _v2_delegated(os.path.dirname(path), controller):
                path = os.path.dirname(path)  # an earlier kgym moved us: make cgroups beside the leaf
            if os.path.exists(os.path.join(path, "cgroup.controllers")) and _writable_dir(path) and \
                    _v2_delegated(path, controller):
                return path, "v2"
    return None


class Cgroup:
    """One candidate's cgroup, made by the zygote."""

    def __init__(self, parent: tuple, name: str):
        self.path, self.version = os.path.join(parent[0], name), parent[1]
        os.mkdir(self.path)

    @property
    def usage_file(self) -> str:
        return os.path.join(self.path, V1_USAGE if self.version == "v1" else V2_USAGE)

    def _write(self, name: str, value) -> bool:
        try:
            with open(os.path.join(self.path, name), "w") as f:
                f.write(str(value))
            return True
        except OSError:
            return False

    def add(self, pid: int) -> bool:
        """Moves a process in; what it starts from then on is in too."""
        return self._write("cgroup.procs", pid)

    def limit(self, memory_mb: int) -> bool:
        """The kernel's hard limit for everything in it (the executor's watchdog, at the same
        limit, usually ends it first with a clearer account)."""
        return self._write("memory.limit_in_bytes" if self.version == "v1" else "memory.max", memory_mb << 20)

    def limit_tasks(self, tasks: int) -> bool:
        """The kernel's limit on the tasks (processes and threads) in it: past it, fork and
        thread creation fail."""
        return self._write("pids.max", tasks)

    def inherit_cpuset(self) -> bool:
        """Makes a cpuset cgroup usable: v1 admits no process before its cpus and mems are set
        (its parent's, until hold_to_cores); v2's empty sets mean its parent's."""
        if self.version == "v2":
            return True
        parent = os.path.dirname(self.path)
        try:
            for name in ("cpuset.cpus", "cpuset.mems"):
                with open(os.path.join(parent, name)) as f:
                    if not self._write(name, f.read().strip()):
                        return False
            return True
        except OSError:
            return False

    def hold_to_cores(self, cores: str) -> bool:
        """Every task in it, and every task it starts, runs on `cores` only ("15", "3-4"):
        sched_setaffinity to any other fails for them."""
        return self._write("cpuset.cpus", cores)

    def out_of_memory(self) -> bool:
        """Whether the kernel killed a process in it for its limit."""
        name = "memory.oom_control" if self.version == "v1" else "memory.events"
        try:
            with open(os.path.join(self.path, name)) as f:
                return any(line.startswith("oom_kill ") and int(line.split()[1]) > 0 for line in f)
        except (OSError, ValueError):
            return False

    def remove(self) -> bool:
        """Kills what is left in it and removes it; False if it is still busy."""
        for _ in range(50):
            try:
                with open(os.path.join(self.path, "cgroup.procs")) as f:
                    pids = [int(p) for p in f.read().split()]
            except OSError:
                return True  # already gone
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            try:
                os.rmdir(self.path)
                return True
            except OSError:
                time.sleep(0.01)
        return False
