"""Confines the evaluation process with what the OS grants; reports what it got.

Order matters: namespaces need privileges that the final uid drop takes away.
"""
import collections
import ctypes
import fcntl
import os
import resource
import signal
import stat
import sys
import tempfile
import time

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
CLONE_NEWPID = 0x20000000
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_BIND = 4096
MS_RDONLY = 1
MS_REMOUNT = 32
MS_NOSUID, MS_NODEV, MS_NOEXEC = 2, 4, 8
MNT_DETACH = 2
# Per-mount flags a read-only remount must keep (in a user namespace they are locked).
MOUNT_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": 1024, "nodiratime": 2048,
               "relatime": 1 << 21, "strictatime": 1 << 24}
# The uids an evaluation's processes take as root, each apart from the others, so none can
# signal, trace or (hidepid) see another: each candidate takes one of CANDIDATE_UIDS that no
# other live candidate holds (the running one and the prepared next two), the judge and the reference runner
# JUDGE_UID, the extension builds BUILD_UID.
NOBODY = 65534
CANDIDATE_UIDS = (NOBODY, 65532, 65530)
JUDGE_UID = 65533
BUILD_UID = 65531
# The extension builders' uids: each builder process claims one of its own for its lifetime
# (claim_uid), so a candidate's code that runs while its extensions are recorded can neither
# signal nor write into another executor's concurrent build. BUILD_UID when none is free.
BUILD_UIDS = tuple(range(65500, 65530))

_libc = ctypes.CDLL(None, use_errno=True)
_libc_keeping_gil = ctypes.PyDLL(None, use_errno=True)  # for clone(2): no other thread runs meanwhile


def _unshare(flags: int) -> bool:
    return _libc.unshare(flags) == 0


def switches_uids() -> bool:
    """Whether this process may run others under uids of their own: root of the machine's user
    namespace, not root of one of its own (own_user_namespace maps a single uid)."""
    if os.geteuid() != 0:
        return False
    try:
        with open("/proc/self/uid_map") as f:
            return any(fields[:2] == ["0", "0"] and int(fields[2]) > 1 for fields in map(str.split, f))
    except (OSError, ValueError, IndexError):
        return False


def own_user_namespace() -> bool:
    """For an unprivileged zygote: makes this process root of a user namespace of its own (its
    uid mapped to 0). Inside, it may make what root makes (pid, mount and network namespaces)
    but no other uid. Call it single-threaded (before torch: unshare refuses a user namespace
    to a threaded process). False where the OS refuses."""
    if os.geteuid() == 0:
        return False
    uid, gid = os.geteuid(), os.getegid()
    if not (_unshare(CLONE_NEWUSER) and _map_own_ids(0, uid, 0, gid)):
        return False
    # Room for one nested namespace per untrusted process (own_tasks_namespace), which closes
    # its own at once; none deeper: a candidate root of a namespace of its own could mount a
    # tmpfs that no process's memory shows.
    _write(MAX_USER_NAMESPACES, str(NESTED_USER_NAMESPACES))
    global _zygote_userns
    _zygote_userns = True
    # And a mount namespace of its own, where each candidate's private disk is a bounded tmpfs
    # (mount_private_disk), which the executor reads through this process's root (seen_from_host).
    global _own_mounts
    _own_mounts = _unshare(CLONE_NEWNS)
    return True


_own_mounts = False  # own_user_namespace made this process a mount namespace of its own
_zygote_userns = False  # own_user_namespace made this process root of a user namespace of its own
# How many user namespaces the zygote's may hold at once: one per live untrusted process
# (running, prepared, exiting candidates and extension builders), with room to spare.
NESTED_USER_NAMESPACES = 64
# The candidate's tasks (processes and threads of its whole tree), however they are held: a
# pids cgroup (root), RLIMIT_NPROC in a user namespace of its own (unprivileged), or the
# executor's count of its pid namespace each tick (neither granted).
CANDIDATE_MAX_TASKS = 512
# Unprivileged, a candidate's tasks also count against kgym's own uid's RLIMIT_NPROC (Linux
# charges a nested user namespace's tasks to every namespace above it): the zygote's next
# forks and their threads need this much of it left.
KGYM_TASK_RESERVE = 256
MIN_CANDIDATE_TASKS = 32
candidate_tasks = CANDIDATE_MAX_TASKS  # what the next untrusted process is held to (candidate_task_cap)


def candidate_task_cap(soft_limit: int, kgym_tasks: int, reserve: int = KGYM_TASK_RESERVE) -> int:
    """The tasks an untrusted process may hold where they count against kgym's uid too:
    CANDIDATE_MAX_TASKS, less where the uid's RLIMIT_NPROC (`soft_limit`, with `kgym_tasks`
    of it in use) would leave kgym fewer than `reserve`; never below MIN_CANDIDATE_TASKS."""
    if soft_limit == resource.RLIM_INFINITY:
        return CANDIDATE_MAX_TASKS
    return max(MIN_CANDIDATE_TASKS, min(CANDIDATE_MAX_TASKS, soft_limit - kgym_tasks - reserve))


def uid_tasks(uid: int) -> int:
    """Tasks (processes and their threads) of real uid `uid` that this process can see, as
    RLIMIT_NPROC counts them."""
    count = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:  # gone meanwhile
            continue
        if int(fields.get("Uid", "-1").split()[0]) == uid:
            count += int(fields.get("Threads", "1"))
    return count


def hold_next_candidate_tasks() -> int:
    """In an unprivileged zygote, before it forks an evaluation's processes: sets what the
    next untrusted process is held to from the uid's RLIMIT_NPROC and what kgym uses of it now
    (as root a pids cgroup or another uid holds it; nothing changes). Returns it."""
    global candidate_tasks
    if _zygote_userns:
        candidate_tasks = candidate_task_cap(resource.getrlimit(resource.RLIMIT_NPROC)[0], uid_tasks(os.getuid()))
    return candidate_tasks


def own_tasks_namespace(granted: list) -> None:
    """Unprivileged (the zygote is root of a user namespace of its own, with no other uid to
    give), an untrusted process becomes root of a user namespace of its own, nested in the
    zygote's, so that RLIMIT_NPROC counts its own tasks: Linux (5.14 and later) counts them per
    user namespace and uid, and without it the candidate shared one count with every process of
    kgym's uid (the zygote's next forks included). Its max_user_namespaces is then 0: none
    deeper. Raises where either fails: in the zygote's namespace, which admits nested ones,
    no untrusted code may run."""
    if not _zygote_userns:
        return
    if not (_unshare(CLONE_NEWUSER) and _map_own_ids(0, 0, 0, 0)):
        raise OSError(ctypes.get_errno(), "a user namespace of the candidate's own was refused")
    if not _write(MAX_USER_NAMESPACES, "0"):
        raise OSError("the candidate's user namespace could not be closed to nested ones")
    release = tuple(int(x) for x in os.uname().release.split("-")[0].split(".")[:2])
    granted.append("own_userns" if release < (5, 14) else f"tasks_by_userns={candidate_tasks}")


def seen_from_host(path: str) -> str:
    """Where a process outside (the executor) finds `path` as this process sees it: the same
    path, or under /proc/<this process>/root where this process has a mount namespace of its
    own (its mounts are not the host's; the same uid owns that namespace, so it may look)."""
    return f"/proc/{os.getpid()}/root{os.path.abspath(path)}" if _own_mounts else path


def _map_own_ids(inside_uid: int, uid: int, inside_gid: int, gid: int) -> bool:
    """Just after unsharing a user namespace: our uid and gid appear there as the inside ones
    (no supplementary groups: the kernel asks setgroups to be denied first)."""
    return _write("/proc/self/setgroups", "deny") and _write("/proc/self/uid_map", f"{inside_uid} {uid} 1") \
        and _write("/proc/self/gid_map", f"{inside_gid} {gid} 1")


MAX_USER_NAMESPACES = "/proc/sys/user/max_user_namespaces"  # per user namespace: ours, for our children

# prctl(2) and capabilities (linux/prctl.h, linux/capability.h, linux/securebits.h)
PR_CAPBSET_DROP, PR_SET_SECUREBITS, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 24, 28, 38, 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
# NOROOT, NO_SETUID_FIXUP, KEEP_CAPS, NO_CAP_AMBIENT_RAISE, each with its lock: uid 0 gains
# nothing again, by exec or otherwise.
SECURE_ALL_BITS_LOCKED = 0xff
_LINUX_CAPABILITY_VERSION_3 = 0x20080522


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _last_capability() -> int:
    text = _read("/proc/sys/kernel/cap_last_cap")
    return int(text) if text.isdigit() else 63


def drop_capabilities() -> bool:
    """Every capability gone for good: the bounding and ambient sets emptied, uid 0 made
    ordinary (securebits, locked), the effective, permitted and inheritable sets cleared, no
    new privileges by exec. For a process that is still uid 0 once confined: unprivileged,
    kgym's candidate is root of a user namespace, where it could otherwise unmount its private
    /tmp and the read-only host and write to the host's /tmp. True when it held."""
    prctl = _libc.prctl
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    ok = prctl(PR_SET_SECUREBITS, SECURE_ALL_BITS_LOCKED, 0, 0, 0) == 0
    for cap in range(_last_capability() + 1):
        ok = prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0 and ok
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header, data = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    ok = _libc.capset(ctypes.byref(header), data) == 0 and ok
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 and ok


# clone(2) by number, for a child in a new pid namespace without changing ours (x86-64, arm64).
SYS_CLONE = {"x86_64": 56, "aarch64": 220}.get(os.uname().machine)


def wait_single_threaded(timeout_s: float = 2.0) -> bool:
    """Whether this process is down to one thread, waiting up to `timeout_s` for threads that
    are exiting (a joined Python thread may still be in glibc's exit path, holding its locks)."""
    deadline = time.monotonic() + timeout_s
    while len(os.listdir("/proc/self/task")) > 1:
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.001)
    return True


def _fork_into_new_pid_namespace() -> int:
    """os.fork(), but the child starts a pid namespace of its own. In a user namespace of our
    own the unshare-then-setns way is refused (setns back to the machine's pid namespace needs
    the machine's root), and a pending unshare would forbid our threads (torch's); clone(2) with
    CLONE_NEWPID touches only the child. Python's fork hooks run around it as for os.fork; the
    call keeps the GIL (PyDLL). A raw clone does not take glibc's locks as fork(3) does, so a
    lock another thread holds at that moment stays held in the child for good (seen: a thread
    just joined, still exiting under load, held malloc's arena and the child hung in its first
    malloc): it waits for the process to be down to one thread (the zygote's only one)."""
    if not wait_single_threaded():
        threads = len(os.listdir("/proc/self/task"))
        print(f"kgym zygote: cloning with {threads} threads still alive after 2 s; the child may "
              "inherit a held lock", file=sys.stderr, flush=True)
    python = ctypes.pythonapi
    python.PyOS_BeforeFork()
    pid = _libc_keeping_gil.syscall(ctypes.c_long(SYS_CLONE), ctypes.c_ulong(CLONE_NEWPID | signal.SIGCHLD),
                                    None, None, None, None)
    if pid == 0:
        python.PyOS_AfterFork_Child()
        return 0
    python.PyOS_AfterFork_Parent()
    if pid < 0:
        raise OSError(ctypes.get_errno(), "clone into a new pid namespace")
    return pid


class PidNamespaces:
    """Forks chosen children into a pid namespace of their own. As root: unshare before the
    fork sets where this process's next child goes, setns to our own namespace (opened once)
    puts the ones after it back; as root of a user namespace of our own (own_user_namespace):
    clone(2). The child is pid 1 there: the /proc it mounts shows only its namespace's
    processes, it can name (signal, trace) no process outside, and when it exits the kernel
    kills every process it left in the namespace."""

    def __init__(self):
        self.cloned = SYS_CLONE is not None and os.geteuid() == 0 and not switches_uids()
        try:
            self.own = -1 if self.cloned else os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            self.own = -1

    def fork(self) -> tuple:
        """(os.fork()'s value, whether the child has a pid namespace of its own)."""
        if self.cloned:  # root of our own user namespace (own_user_namespace)
            try:
                return _fork_into_new_pid_namespace(), True
            except OSError:
                self.cloned = False  # refused: plain forks from now on
                return os.fork(), False
        isolated = self.own >= 0 and _unshare(CLONE_NEWPID)
        pid = -1
        try:
            pid = os.fork()
        finally:  # in the parent, also when the fork failed (pid -1); not in the child (pid 0)
            if isolated and pid != 0 and _libc.setns(self.own, CLONE_NEWPID) != 0:
                # Every later child would go into a namespace whose init may be gone: stop here.
                raise OSError(ctypes.get_errno(), "kgym zygote: could not return to its own pid namespace")
        if pid == 0:
            if self.own >= 0:
                os.close(self.own)
            return 0, isolated
        return pid, isolated


def close_fds_except(keep: set) -> None:
    """In a freshly forked child, before any candidate code: closes every descriptor above the
    standard streams but `keep`. The zygote holds the running evaluation's pipes and sockets
    when it forks the next one's processes; none of them may reach those (a held copy of a
    pipe's write end also keeps its reader from ever seeing the end)."""
    low = 3
    for fd in sorted(f for f in keep if f >= 3):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, os.sysconf("SC_OPEN_MAX"))


def claim_uid(pool: tuple, lock_dir: str, fallback: int) -> tuple:
    """(uid, descriptor holding its lock): the first uid of `pool` that no other live process
    holds, by an exclusive lock on lock_dir/<uid> (machine-wide for processes that share
    lock_dir; the kernel drops the lock when the holder exits). (fallback, -1) when every one
    is held or locks cannot be taken."""
    try:
        os.makedirs(lock_dir, mode=0o700, exist_ok=True)
    except OSError:
        return fallback, -1
    for uid in pool:
        try:
            fd = os.open(os.path.join(lock_dir, str(uid)), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError:
            continue
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return uid, fd
        except OSError:
            os.close(fd)
    return fallback, -1


def _mount(source: str, target: str, flags: int, fstype: str = None, data: str = None) -> bool:
    encode = lambda text: text.encode() if text else None  # noqa: E731
    return _libc.mount(encode(source), encode(target), encode(fstype), flags, encode(data)) == 0


def _closed_ancestor(path: str):
    """The first directory on the way to `path` that others may not traverse, and the
    next component below it; None when the whole way is open."""
    parts = path.strip("/").split("/")
    for depth in range(len(parts)):
        parent = "/" + "/".join(parts[:depth])
        if not os.path.exists(parent):
            return None
        if not os.stat(parent).st_mode & stat.S_IXOTH:
            return parent, parts[depth]
    return None


def _expose(paths: list, granted: list) -> bool:
    """Makes `paths` reachable for the sandbox uid inside our mount namespace: each closed
    directory on the way (e.g. a 0700 home holding the Python install) is covered by an
    open tmpfs that holds only bind mounts of what is needed, so nothing else in it shows."""
    for _ in range(8):
        closed = {}
        for path in paths:
            hit = _closed_ancestor(path)
            if hit:
                closed.setdefault(hit[0], set()).add(hit[1])
        if not closed:
            return True
        for parent, children in closed.items():
            held = {c: os.open(os.path.join(parent, c), os.O_PATH) for c in children}
            if not _mount("tmpfs", parent, 0, "tmpfs", "mode=0755"):
                return False
            for child, fd in held.items():
                target = os.path.join(parent, child)
                if os.path.isdir(f"/proc/self/fd/{fd}"):
                    os.mkdir(target)
                else:
                    open(target, "w").close()
                if not _mount(f"/proc/self/fd/{fd}", target, MS_BIND | MS_REC):
                    return False
                os.close(fd)
            granted.append("exposed:" + ",".join(os.path.join(parent, c) for c in sorted(children)))
    return False


def _python_paths() -> list:
    import site
    paths = {sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable)),
             os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}
    paths.update(site.getsitepackages())
    paths.update(p for p in sys.path if p and os.path.isdir(p))
    for library in ("KGYM_CUPTI_LIB", "KGYM_TRACE_LIB"):  # the trace libraries (and the CUPTI linked)
        if os.environ.get(library):
            paths.add(os.path.dirname(os.path.realpath(os.environ[library])))
    return sorted({os.path.realpath(p) for p in paths if os.path.exists(p)})


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


def _write(path: str, text: str) -> bool:
    try:
        with open(path, "w") as f:
            f.write(text)
        return True
    except OSError:
        return False


def _enter_namespaces(granted: list) -> None:
    if os.geteuid() == 0:
        if not switches_uids():
            granted.append("userns")  # the zygote's own (own_user_namespace)
        if _unshare(CLONE_NEWNET):
            granted.append("netns")
        if _unshare(CLONE_NEWNS):
            granted.append("mountns")
        return
    # Unprivileged: a user namespace makes us root inside it, mapped to our own uid.
    uid, gid = os.geteuid(), os.getegid()
    if not _unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWNS):
        return
    _map_own_ids(uid, uid, gid, gid)
    granted += ["userns", "netns", "mountns"]


def _private_tmp(workdir: str, granted: list) -> str:
    """Mounts the workdir over the world-writable directories; returns the workdir's path
    as the sandbox sees it (/tmp when that worked)."""
    if "mountns" not in granted or not _mount("", "/", MS_REC | MS_PRIVATE):
        return workdir
    # Shadow /tmp last: the workdir itself usually lives under it.
    shadowed = [d for d in ("/var/tmp", "/dev/shm", "/tmp")
                if os.path.isdir(d) and _mount(workdir, d, MS_BIND)]
    if "/tmp" not in shadowed:
        return workdir
    granted.append("private_tmp:" + ",".join(shadowed))
    _read_only_host(set(shadowed), granted)
    return "/tmp"


def mount_private_disk(path: str, size_mb: int) -> bool:
    """A size-limited tmpfs on `path` (the candidate's directory; its trace and log are read
    there, by the executor through seen_from_host), so what the candidate writes to its private
    /tmp, /var/tmp and /dev/shm is bounded and goes when the executor removes the directory
    (unmounting it as root; unprivileged, removing the mount point the host sees takes the
    mount in our namespace with it). As root, or as root of our own user and mount namespace;
    False where the OS refuses (then the executor walks the directory each tick)."""
    return os.geteuid() == 0 and _mount("tmpfs", path, MS_NOSUID | MS_NODEV, "tmpfs", f"size={size_mb}m,mode=0700")


def resize_private_disk(path: str, size_mb: int) -> bool:
    """The request's own limit, set before its candidate's code exists (the process was
    prepared before the request came)."""
    return _mount("tmpfs", path, MS_REMOUNT | MS_NOSUID | MS_NODEV, "tmpfs", f"size={size_mb}m,mode=0700")


def unmount(path: str) -> None:
    _libc.umount2(path.encode(), MNT_DETACH)


Mount = collections.namedtuple("Mount", "root point options fstype super_options")


def mounts() -> list:
    """The mounts of this mount namespace (/proc/self/mountinfo): the root of the mounted
    filesystem, the mount point, per-mount options, filesystem type and its options."""
    unescape = lambda path: path.encode().decode("unicode_escape")  # noqa: E731  (\040 is a space)
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, right = (part.split() for part in line.split(" - ", 1))
            found.append(Mount(unescape(left[3]), unescape(left[4]), left[5].split(","), right[0],
                               right[2].split(",") if len(right) > 2 else []))
    return found


def _read_only_host(private: set, granted: list) -> None:
    """Every mount but the private directories and /proc becomes read-only in this mount
    namespace, so no world-writable host directory (/run/lock, /var/crash, a home...) takes a
    file. Device nodes stay usable: a read-only mount refuses new files, not writes to them."""
    failed = []
    for mount in mounts():
        target = mount.point
        if "ro" in mount.options or any(target == d or target.startswith(d + "/") for d in private | {"/proc"}):
            continue
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY
        for option in mount.options:
            flags |= MOUNT_FLAGS.get(option, 0)
        if not _mount("", target, flags):
            failed.append(target)
    granted.append("read_only_host" if not failed else "read_only_host_except:" + ",".join(failed[:8]))


def _hide_other_processes(granted: list) -> None:
    """A /proc of its own with hidepid=2: the process sees only its own uid's processes, so not
    kgym's (their command lines), the judge's or another evaluation's. Root only: without a
    pid namespace of its own, a user namespace may not mount proc."""
    if "mountns" in granted and os.geteuid() == 0 and \
            _mount("proc", "/proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "proc", "hidepid=2"):
        granted.append("hidepid")
    if os.getpid() == 1:  # PidNamespaces: that /proc lists the namespace's processes only
        granted.append("pidns")


def set_limits(limits: dict) -> list:
    """Lowers resource limits (process-wide, for good); returns what was set."""
    granted = []
    for name, value in limits.items():
        if value is None:
            continue
        which = getattr(resource, name)
        try:
            resource.setrlimit(which, (value, value))
            granted.append(f"{name.lower()}={value}")
        except (ValueError, OSError):
            pass
    return granted


def _drop_privileges_prepare(workdir: str, uid: int) -> None:
    """Hands the workdir to the process's uid while we still may."""
    if not switches_uids():
        return
    for root, dirs, files in os.walk(workdir):
        for name in [root] + [os.path.join(root, n) for n in dirs + files]:
            os.chown(name, uid, uid)


def _drop_privileges(granted: list, uid: int) -> None:
    if not switches_uids():
        return
    needed = _python_paths()
    if any(_closed_ancestor(p) for p in needed) and \
            ("mountns" not in granted or not _expose(needed, granted)):
        granted.append("uid_drop_skipped:python_not_readable")
        return
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    granted.append(f"uid:{uid}")


def pin_to_core(core) -> None:
    """This process onto one core (zygote.timing_cores); None leaves it where it is."""
    if core is not None:
        os.sched_setaffinity(0, {core})


def keep_off(cores: set) -> None:
    """This process, and what it forks from now on, off `cores` (the timing cores: only the
    running evaluation's timed processes go there, each by pin_to_core)."""
    others = os.sched_getaffinity(0) - set(cores)
    if others:
        os.sched_setaffinity(0, others)


# The timing core is shared by the candidate's process and the reference runner (they never
# run at once). Whatever the candidate starts there while the reference is timed (busy threads,
# children) would slow the reference: the trusted processes run at the highest priority, the
# candidate's whole tree at the lowest, which it cannot raise (RLIMIT_NICE 0). By the kernel's
# weights (nice -20: 88761, nice 19: 15) a busy candidate thread gets 0.02% of the core while
# the reference runs there.
TRUSTED_NICE = -20
CANDIDATE_NICE = 19


def raise_priority(granted: list) -> None:
    """This process (its one thread, before any other exists: threads inherit it) at
    TRUSTED_NICE, where the OS grants it (root)."""
    try:
        os.setpriority(os.PRIO_PROCESS, 0, TRUSTED_NICE)
        granted.append(f"nice={TRUSTED_NICE}")
    except OSError:
        granted.append("nice_refused")


def run_delay_s() -> float:
    """Seconds this thread has spent ready to run but waiting for a core (the kernel's
    schedstat), 0 where the kernel does not say."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            return int(f.read().split()[1]) * 1e-9
    except (OSError, ValueError, IndexError):
        return 0.0


def lower_priority() -> list:
    """Every thread of this process's group at CANDIDATE_NICE (Linux's nice is per thread,
    PRIO_PGRP reaches each one; new threads inherit their creator's), and RLIMIT_NICE and
    RLIMIT_RTPRIO at 0, so neither this process nor anything it starts can raise it again nor
    take a real-time policy (SCHED_FIFO would starve the reference outright). Before the
    candidate's code exists; its group is its own (setsid)."""
    os.setpriority(os.PRIO_PGRP, 0, CANDIDATE_NICE)
    for limit in (resource.RLIMIT_NICE, resource.RLIMIT_RTPRIO):
        resource.setrlimit(limit, (0, 0))
    return [f"nice={CANDIDATE_NICE}"]


def tasks_limit(granted: list) -> int:
    """RLIMIT_NPROC for an untrusted process: `candidate_tasks` where it counts the process's
    own tasks (own_tasks_namespace), else 1024 (it counts every process of the uid)."""
    return candidate_tasks if any(g.startswith("tasks_by_userns=") for g in granted) else 1024


def evaluation_limits(device: str, memory_limit_mb: int, granted: list = ()) -> dict:
    """The candidate process's resource limits (set_limits), set before its code loads;
    `granted`: what confine granted it."""
    with open("/proc/self/status") as f:
        vm_size_kb = int(next(line for line in f if line.startswith("VmSize:")).split()[1])
    # CUDA reserves far more address space than it uses, so on the GPU host memory is
    # bounded by the executor's RSS watchdog instead of RLIMIT_AS.
    address_space = None if device == "cuda" else vm_size_kb * 1024 + memory_limit_mb * (1 << 20)
    return {"RLIMIT_AS": address_space, "RLIMIT_CORE": 0, "RLIMIT_FSIZE": 1 << 30,
            "RLIMIT_NPROC": tasks_limit(granted), "RLIMIT_CPU": 1800}


def confine(workdir: str, uid: int, lap=lambda name: None, trusted_priority: bool = False):
    """Called in a freshly forked evaluation process (judge or candidate), before anything
    else runs (CUDA included: user namespaces need a single-threaded caller); as root, the
    process then runs as `uid`. Resource limits come later (set_limits). Returns what was
    granted and the workdir's path inside. `lap(name)` is called after each mechanism
    (harness_seconds: confine_setsid, _namespaces, _mounts, _proc, _uid). `trusted_priority`:
    the judge's and the reference runner's on a timing core (raise_priority), before the uid
    drop and any namespace takes the right to."""
    granted = []
    os.setsid()  # own process group: the executor kills the whole group
    granted.append("setsid")
    if trusted_priority:
        raise_priority(granted)
    _drop_privileges_prepare(workdir, uid)
    lap("confine_setsid")
    _enter_namespaces(granted)
    lap("confine_namespaces")
    workdir = _private_tmp(workdir, granted)
    lap("confine_mounts")
    _hide_other_processes(granted)
    lap("confine_proc")
    _drop_privileges(granted, uid)  # set_limits comes after: RLIMIT_NPROC then counts this uid
    if uid != JUDGE_UID:  # an untrusted process (a candidate, an extension build)
        own_tasks_namespace(granted)
    if os.geteuid() == 0:  # root of its own user namespace, or the uid drop skipped
        granted.append("no_capabilities" if drop_capabilities() else "capabilities_kept")
        if _read(MAX_USER_NAMESPACES) == "0":
            granted.append("no_nested_userns")
    os.chdir(workdir)
    use_private_dirs(workdir)
    lap("confine_uid")
    return granted, workdir


def use_private_dirs(workdir: str) -> None:
    """HOME, TMPDIR and Triton's cache under the private workdir, and Python's `tempfile` told
    too: it keeps the directory it chose first, and the imports before confinement chose the
    caller's TMPDIR, which the private /tmp hides (unprivileged on the GPU, every Triton
    compile failed with FileNotFoundError)."""
    for var in ("HOME", "TMPDIR", "TRITON_CACHE_DIR"):
        path = os.path.join(workdir, "home" if var == "HOME" else "tmp" if var == "TMPDIR" else "triton")
        os.makedirs(path, exist_ok=True)
        os.environ[var] = path
    tempfile.tempdir = os.environ["TMPDIR"]
