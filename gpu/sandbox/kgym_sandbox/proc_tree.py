"""The machine's process tree as /proc shows it: the zygote's sweeps and the GPU watch read it."""
import os


def stat_fields(pid: int) -> list:
    """The fields of /proc/<pid>/stat after the command name (which may hold ")"): state, parent
    pid, ...; [] if there is no such process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def unfit(pid: int) -> str:
    """"gone" (no such process, a zombie or dead), "stopped" (stopped or traced) or "" (it
    can run): what its /proc/<pid>/stat state says of a process kgym holds ready."""
    state = (stat_fields(pid) or [""])[0]
    if state in ("", "Z", "X"):
        return "gone"
    return "stopped" if state in ("T", "t") else ""


def parent(pid: int) -> int:
    """Its parent's pid; 0 if there is no such process."""
    fields = stat_fields(pid)
    return int(fields[1]) if len(fields) > 1 else 0


def parents() -> dict:
    """pid -> parent pid of every process listed now, in one pass over /proc."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = stat_fields(int(entry))
            if len(fields) > 1:
                found[int(entry)] = int(fields[1])
    return found


def descendants(root: int, keep: set) -> list:
    """Every process below `root`, except those in `keep` and below them."""
    children = {}
    for pid, parent_pid in parents().items():
        children.setdefault(parent_pid, []).append(pid)
    found, frontier = [], [root]
    while frontier:
        pid = frontier.pop()
        for child in children.get(pid, []):
            if child not in keep:
                found.append(child)
                frontier.append(child)
    return found
